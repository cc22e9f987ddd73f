# Stand-in for cyborg.conf: the options the drivers read, from CONFORMANCE_CONF (JSON:
# host, gpu_devices.enabled_vgpu_types / filter_sriov_vfs, vgpu_<type>.device_addresses).
import json
import os
import types

from cyborg.conf import devices  # noqa: F401


def _ns(d):
    return types.SimpleNamespace(**{k: _ns(v) if isinstance(v, dict) else v for k, v in d.items()})


_raw = json.loads(os.environ.get('CONFORMANCE_CONF', '{}'))
_raw.setdefault('gpu_devices', {})
_raw['gpu_devices'].setdefault('enabled_vgpu_types', [])
_raw['gpu_devices'].setdefault('filter_sriov_vfs', False)
CONF = _ns(_raw)
