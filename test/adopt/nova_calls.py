"""Nova's own Cyborg client (Debian's python3-nova, nova/accelerator/cyborg.py) on adopted ARQs.

argv: the v2 API's root (http://host:port/v2) and a JSON plan:
  {"list": <instance>, "delete": <instance>, "bind": {"profile", "hostname", "rp", "instance"}}
Prints, as JSON, what each call answered: the resolved ARQs of "list" (as Nova reads them before a
hard reboot), each one again by uuid, "delete"'s instance's ARQs before and after
delete_arqs_for_instance (Nova's teardown), and a new ARQ bound on a free device (create_arqs,
bind_arqs, then the resolved ARQs of the new instance, polled as Nova waits for its event).
Authentication is keystoneauth's noauth plugin: our noauth mode reads its 'notused' token.
"""
import json
import sys
import time

from keystoneauth1 import adapter, noauth, session
from nova.accelerator import cyborg
from nova import exception

endpoint, plan = sys.argv[1], json.loads(sys.argv[2])
client = cyborg._CyborgClient.__new__(cyborg._CyborgClient)
client._client = adapter.Adapter(session.Session(auth=noauth.NoAuth()), endpoint_override=endpoint)
out = {'calls': 0}


def call(f, *args, **kwargs):
    out['calls'] += 1
    return f(*args, **kwargs)


def short(arq):
    return {k: arq.get(k) for k in ('uuid', 'state', 'device_profile_name', 'hostname', 'device_rp_uuid',
                                    'instance_uuid', 'attach_handle_type', 'attach_handle_info')}


listed = call(client.get_arqs_for_instance, plan['list'], only_resolved=True)
out['list'] = [short(a) for a in listed]
out['by_uuid'] = [short(call(client.get_arq_by_uuid, a['uuid'])) for a in listed]
out['delete_before'] = [a['uuid'] for a in call(client.get_arqs_for_instance, plan['delete'])]
call(client.delete_arqs_for_instance, plan['delete'])
try:
    out['delete_after'] = [a['uuid'] for a in call(client.get_arqs_for_instance, plan['delete'])]
except exception.AcceleratorRequestOpFailed:
    out['delete_after'] = []  # Nova's client says "none" by raising
b = plan['bind']
arqs = call(client.create_arqs, b['profile'])
# What Zed's compute manager binds with (nova/compute/manager.py _bind_arqs).
bindings = {arqs[0]['uuid']: {'hostname': b['hostname'], 'device_rp_uuid': b['rp'], 'instance_uuid': b['instance']}}
call(client.bind_arqs, bindings)
deadline = time.time() + 30
resolved = []
while time.time() < deadline:
    try:
        resolved = call(client.get_arqs_for_instance, b['instance'], only_resolved=True)
    except exception.AcceleratorRequestOpFailed:
        resolved = []
    if resolved:
        break
    time.sleep(0.2)
out['bound'] = [short(a) for a in resolved]
print(json.dumps(out))
