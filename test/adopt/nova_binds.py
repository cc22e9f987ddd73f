"""Nova's own Cyborg client (Debian's python3-nova, nova/accelerator/cyborg.py) making ARQs on a
running OpenStack Cyborg, as nova-conductor and nova-compute do before an adoption.

argv: Cyborg's v2 root (http://host:port/v2) and a JSON plan:
  {"headers": {...}, "profile": <name>, "bind": [{"hostname", "rp", "instance"}], "initial": n,
   "bogus": {"hostname", "rp", "instance"} or null}
The headers stand in for keystonemiddleware (Cyborg's api-paste.ini without authtoken reads
X-Roles, X-User-Id and X-Project-Id). Prints, as JSON, the profile's groups as Nova reads them,
the uuids made per purpose and the number of calls.
"""
import json
import sys
import time

from keystoneauth1 import adapter, noauth, session
from nova.accelerator import cyborg
from nova import exception

endpoint, plan = sys.argv[1], json.loads(sys.argv[2])
client = cyborg._CyborgClient.__new__(cyborg._CyborgClient)
sess = session.Session(auth=noauth.NoAuth(), additional_headers=plan['headers'])
client._client = adapter.Adapter(sess, endpoint_override=endpoint)
out = {'calls': 0, 'bound': [], 'initial': [], 'bogus': None}


def call(f, *args, **kwargs):
    out['calls'] += 1
    return f(*args, **kwargs)


# What nova-api reads of the flavor's accel:device_profile.
out['groups'] = call(client.get_device_profile_groups, plan['profile'])
for b in plan['bind']:
    arq = call(client.create_arqs, plan['profile'])[0]
    # What Zed's compute manager binds with (nova/compute/manager.py _bind_arqs).
    call(client.bind_arqs, {arq['uuid']: {'hostname': b['hostname'], 'device_rp_uuid': b['rp'],
                                          'instance_uuid': b['instance']}})
    out['bound'].append(arq['uuid'])
for _ in range(plan['initial']):
    out['initial'].append(call(client.create_arqs, plan['profile'])[0]['uuid'])
if plan.get('bogus'):
    b = plan['bogus']
    arq = call(client.create_arqs, plan['profile'])[0]
    try:
        call(client.bind_arqs, {arq['uuid']: {'hostname': b['hostname'], 'device_rp_uuid': b['rp'],
                                              'instance_uuid': b['instance']}})
    except exception.AcceleratorRequestBindingFailed:
        pass  # Cyborg answers 404 for a provider it does not know, and leaves the ARQ BindStarted
    out['bogus'] = arq['uuid']
# The binds are done when Nova's reads see them resolved (Cyborg binds inside the PATCH).
deadline = time.time() + 30
for b in plan['bind']:
    while time.time() < deadline:
        try:
            if call(client.get_arqs_for_instance, b['instance'], only_resolved=True):
                break
        except exception.AcceleratorRequestOpFailed:
            pass
        time.sleep(0.2)
print(json.dumps(out))
