import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntelNicDriver } from '../../drivers/nic/index.js';
import { buildHost, NIC_HOST } from '../fixtures/vendors/hosts.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

/** Debian's python3 with python3-nova (.ci/run installs it); not the pyenv one on PATH. */
const PYTHON = '/usr/bin/python3';
const novaInstalled = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import nova.accelerator.cyborg'], { stdio: 'ignore' }).status === 0;
const NOAUTH = { 'x-auth-token': 'notused', 'content-type': 'application/json' };

/**
 * A SmartNIC port's boot, as Nova runs it: a Cyborg-style device profile for a VF on physnet1,
 * an ARQ bound to the X710's VF, then Nova's own client (nova/accelerator/cyborg.py) reads the
 * resolved ARQ and builds the PCI device profile for Neutron — which needs `physical_network`.
 */
describe.skipIf(!novaInstalled)("Nova's get_arq_pci_device_profile on an intel_nic_driver VF (python3-nova)", () => {
  let rt: Stack;
  let url: string;

  beforeAll(async () => {
    const root = buildHost(NIC_HOST, 'nova-nic');
    rt = await startStack({
      hosts: ['compute1'],
      api: true,
      drivers: (host) => [new IntelNicDriver({ host, sysfsRoot: root, physicalDeviceMappings: ['physnet1:ens1f0', 'physnet2:ens1f1'] })],
    });
    url = await rt.app!.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${url}${path}`, { method, headers: NOAUTH, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };

  it("gets physical_network and the VF's PCI slot for the bound ARQ", async () => {
    const vf = rt.conductor.listAccelerators({ host: 'compute1' }).find((a) => a.traits.includes('CUSTOM_VF') && a.traits.includes('CUSTOM_PHYSNET1'))!;
    const enabled = await rt.conductor.act(vf.id, { type: 'ENABLE' });
    expect(enabled.error).toBeNull();
    expect(enabled.state).toBe('ready');
    const dp = await call('POST', '/v2/device_profiles', [
      { name: 'smartnic-physnet1', groups: [{ 'resources:CUSTOM_NIC': '1', 'trait:CUSTOM_VF': 'required', 'trait:CUSTOM_PHYSNET1': 'required' }] },
    ]);
    expect(dp.status).toBe(201);
    const created = await call('POST', '/v2/accelerator_requests', { device_profile_name: 'smartnic-physnet1' });
    expect(created.status).toBe(201);
    const arq = created.json.arqs[0].uuid as string;
    const instance = randomUUID();
    const bound = await call('PATCH', '/v2/accelerator_requests', {
      [arq]: [
        { op: 'add', path: '/hostname', value: 'compute1' },
        { op: 'add', path: '/device_rp_uuid', value: vf.rpUuid },
        { op: 'add', path: '/instance_uuid', value: instance },
      ],
    });
    expect(bound.status).toBe(202);
    await eventually(async () => (await call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`)).status === 200, {
      what: 'the ARQ resolved',
    });

    // Not spawnSync: the API answering it runs in this process.
    const run = await promisify(execFile)(PYTHON, [join(import.meta.dirname, 'nova', 'pci_profile.py'), `${url}/v2`, instance], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual([{ physical_network: 'physnet1', pci_slot: '0000:3b:02.0', arq_uuid: arq }]);
  });
});
