"""Runs one of OpenStack Cyborg's driver discoveries on a fixture sysfs tree and prints its
report as JSON, in the shape of this project's DeviceT (test/conformance/*.test.ts compares
them). Paths under /sys are read from CONFORMANCE_SYSFS; lspci answers from CONFORMANCE_LSPCI;
options come from CONFORMANCE_CONF (stand-ins beside this file).
Usage: run_cyborg.py <module> <function> [argument...]
"""
import builtins
import glob
import importlib
import json
import os
import socket
import sys

ROOT = os.environ['CONFORMANCE_SYSFS']


def _host(path):
    p = os.fspath(path)
    return ROOT + p[len('/sys'):] if isinstance(p, str) and (p == '/sys' or p.startswith('/sys/')) else path


def _sys(path):
    return '/sys' + path[len(ROOT):] if isinstance(path, str) and path.startswith(ROOT) else path


_open, _listdir, _exists, _isdir, _readlink = builtins.open, os.listdir, os.path.exists, os.path.isdir, os.readlink
_glob, _realpath = glob.glob, os.path.realpath
builtins.open = lambda path, *a, **k: _open(_host(path), *a, **k)
os.listdir = lambda path='.': _listdir(_host(path))
os.path.exists = lambda path: _exists(_host(path))
os.path.isdir = lambda path: _isdir(_host(path))
os.readlink = lambda path, *a, **k: _readlink(_host(path), *a, **k)
# Paths come back as the driver wrote them, under /sys.
glob.glob = lambda pattern, *a, **k: sorted(_sys(p) for p in _glob(_host(pattern), *a, **k))
os.path.realpath = lambda path, *a, **k: _sys(_realpath(_host(path), *a, **k))
_walk, _glob1 = os.walk, glob.glob1
os.walk = lambda top, *a, **k: ((_sys(d), dn, fn) for d, dn, fn in _walk(_host(top), *a, **k))
glob.glob1 = lambda dirname, pattern: _glob1(_host(dirname), pattern)
socket.gethostname = lambda: json.loads(os.environ.get('CONFORMANCE_CONF', '{}')).get('host', 'localhost')


def _device(d):
    return {
        'type': d.type, 'vendor': d.vendor, 'model': d.model, 'stdBoardInfo': d.std_board_info,
        'vendorBoardInfo': d.vendor_board_info, 'controlPath': {'type': d.controlpath_id.cpid_type, 'info': d.controlpath_id.cpid_info},
        'deployables': [{
            'name': dep.name, 'numAccelerators': dep.num_accelerators, 'driverName': dep.driver_name,
            'attributes': [{'key': a.key, 'value': a.value} for a in dep.attribute_list],
            'attachHandles': [{'attachType': h.attach_type, 'attachInfo': h.attach_info} for h in dep.attach_handle_list],
        } for dep in d.deployable_list],
    }


def main():
    module = importlib.import_module(sys.argv[1])
    try:
        devices = getattr(module, sys.argv[2])(*sys.argv[3:])
        print(json.dumps({'ok': True, 'devices': [_device(d) for d in devices]}))
    except Exception as e:  # Cyborg's own failure is a result to compare, not a crash of the suite.
        print(json.dumps({'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}))


main()
