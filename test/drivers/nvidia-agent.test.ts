import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { enabledDrivers } from '../../roles/drivers.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { deleteTree, readProvider, uniqueHost } from '../placement/harness.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator moves a GPU host from OpenStack Cyborg: its cyborg.conf says
 * `enabled_drivers = nvidia_gpu_driver`, and the agent reports the GPUs under the names Cyborg's
 * NVIDIA driver gives them, so Placement ends up with the same providers and traits.
 */
describe('an agent with enabled_drivers = nvidia_gpu_driver on an H100 host', () => {
  let root: string;
  let s: Stack | undefined;
  beforeAll(() => {
    root = buildHost(NVIDIA_HOST, 'nvidia-agent');
  });
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  const driversOf = (host: string) =>
    enabledDrivers(
      loadConfig(
        { host, dataDir: root, generic: { sysfsRoot: root }, gpu: { filterSriovVfs: true } },
        { CYBORG_ENABLED_DRIVERS: 'nvidia_gpu_driver' },
        { role: 'agent' },
      ),
      quietLogger(),
    );

  it('registers every GPU as Cyborg names it: <host>_<address>, provider uuid3 of that name, PGPU with CUSTOM_NVIDIA_<PID>', async () => {
    s = await startStack({ hosts: ['compute1'], drivers: driversOf });
    const accs = s.conductor.listAccelerators().sort((a, b) => a.name.localeCompare(b.name));
    expect(accs.map((a) => a.name)).toEqual(['compute1_0000:17:00.0', 'compute1_0000:1b:00.0', 'compute1_0000:43:00.0', 'compute1_0000:b1:00.0']);
    for (const a of accs) expect(a.rpUuid).toBe(uuid3(NAMESPACE_DNS, a.name));
    const h100 = accs.find((a) => a.name === 'compute1_0000:43:00.0')!;
    expect(h100).toMatchObject({ resourceClass: 'PGPU', state: 'inactive' });
    expect(s.conductor.listHosts()[0]).toMatchObject({ name: 'compute1', drivers: [{ name: 'nvidia_gpu_driver' }] });
  });

  it.skipIf(!svc.placement)("with a real Placement, the providers carry CUSTOM_NVIDIA_<PID> as Cyborg's do", async () => {
    const host = uniqueHost('nv');
    s = await startStack({ hosts: [host], drivers: driversOf, placement: { url: svc.placement!, createRoots: true } });
    const stack = s;
    try {
      const h100 = stack.conductor.listAccelerators().find((a) => a.name === `${host}_0000:43:00.0`)!;
      await eventually(() => stack.sync.status(h100.id)?.status === 'in_sync', { what: 'the H100 in sync', timeoutMs: 20_000 });
      const provider = await readProvider(stack.placement, uuid3(NAMESPACE_DNS, `${host}_0000:43:00.0`));
      expect(provider?.traits).toEqual(expect.arrayContaining(['OWNER_CYBORG', 'CUSTOM_NVIDIA_2331']));
      expect(provider?.inventories.PGPU).toMatchObject({ total: 1 });
    } finally {
      await stack.stop();
      s = undefined;
      await deleteTree(stack.placement, host);
    }
  });
});
