# Stand-in for cyborg.conf: the options the drivers read, from CONFORMANCE_CONF (JSON: host,
# gpu_devices.enabled_vgpu_types / filter_sriov_vfs, vgpu_<type>.device_addresses,
# x710_static.physical_device_mappings / function_device_mappings). A section that is not
# there raises oslo.config's NoSuchOptError, as the real CONF does.
import json
import os

from oslo_config import cfg

from cyborg.conf import devices  # noqa: F401


class _Group(object):
    def __init__(self, values):
        for k, v in values.items():
            setattr(self, k, _Group(v) if isinstance(v, dict) else v)

    def __getattr__(self, name):
        raise cfg.NoSuchOptError(name)


_raw = json.loads(os.environ.get('CONFORMANCE_CONF', '{}'))
_raw.setdefault('gpu_devices', {})
_raw['gpu_devices'].setdefault('enabled_vgpu_types', [])
_raw['gpu_devices'].setdefault('filter_sriov_vfs', False)
CONF = _Group(_raw)
