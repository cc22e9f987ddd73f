import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment } from './deployment.js';
import { natsServerInstalled, PrivateNats, type RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * The NATS server itself goes away (killed) and comes back on the same port. Every process keeps
 * trying; once it is back they reconnect, the agent resyncs its inventory, and the deployment
 * works as before: same accelerators, no duplicates, operations accepted.
 */
describe.skipIf(!natsServerInstalled)('a NATS server restart under a running deployment', { timeout: 300_000 }, () => {
  let nats: PrivateNats;
  let dep: Deployment;
  let conductor: RoleProcess;
  let agent: RoleProcess;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    dep = new Deployment(nats.url);
    conductor = await dep.conductor('conductor-n');
    agent = await dep.agent('node-n');
  }, 180_000);
  afterAll(async () => {
    await dep?.stop();
    await nats?.stop();
  });

  it('reconnects every process and resyncs the agent after the server returns', async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-n' }).length === 2, { what: 'node-n accelerators' });
    const gpu = api.listAccelerators({ host: 'node-n' }).find((a) => a.deviceType === 'GPU')!;
    await api.act(gpu.id, { type: 'ENABLE' });

    await nats.down();
    await agent.waitLog((l) => l.msg === 'disconnected from NATS; reconnecting', 'agent notices the outage');
    await nats.up();

    await agent.waitLog((l) => l.msg === 'reconnected to NATS', 'agent reconnected', 60_000);
    await conductor.waitLog((l) => l.msg === 'reconnected to NATS', 'conductor reconnected', 60_000);
    await agent.waitLog((l) => l.msg === 'resynced with the conductor after a reconnect', 'agent resynced', 60_000);
    // The test's own api client is a process of the deployment too: its calls go out once it is back.
    await eventually(() => dep.clientLog.lines.some((l) => l.msg === 'reconnected to NATS'), { what: 'the api client reconnected', timeoutMs: 60_000 });
    expect(conductor.alive && agent.alive).toBe(true);

    await eventually(() => api.getHost('node-n').state === 'online', { what: 'node-n online' });
    const accs = api.listAccelerators({ host: 'node-n' });
    expect(accs).toHaveLength(2);
    expect(api.getAccelerator(gpu.id).state).toBe('ready');
    const fpga = accs.find((a) => a.deviceType === 'FPGA')!;
    expect((await api.act(fpga.id, { type: 'ENABLE' })).state).toBe('ready');
  });
});
