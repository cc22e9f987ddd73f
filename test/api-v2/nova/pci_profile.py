"""Nova's own Cyborg client (Debian's python3-nova) reads an instance's resolved ARQs and builds
the PCI device profile of a SmartNIC port from them, as nova's neutron code does.

argv: the v2 API's root (http://host:port/v2) and the instance uuid. Prints the profile as JSON.
Authentication is keystoneauth's noauth plugin: our noauth mode reads its 'notused' token.
"""
import json
import sys

from keystoneauth1 import adapter, noauth, session
from nova.accelerator import cyborg

endpoint, instance = sys.argv[1], sys.argv[2]
client = cyborg._CyborgClient.__new__(cyborg._CyborgClient)
client._client = adapter.Adapter(session.Session(auth=noauth.NoAuth()), endpoint_override=endpoint)
arqs = client.get_arqs_for_instance(instance, only_resolved=True)
print(json.dumps([cyborg.get_arq_pci_device_profile(arq) for arq in arqs]))
