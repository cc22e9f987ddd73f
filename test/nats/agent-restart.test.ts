import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandMessage, CommandReply } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import { freshDatabase } from '../support/database.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * An operator runs a conductor and an agent as separate processes over NATS. The agent registers
 * and reports what it discovered; it dies (SIGKILL) with an accelerator attached, its host goes
 * stale then lost and its accelerators offline with their allocations kept; it comes back from its
 * local cache (epoch + 1), resyncs, and nothing is lost, duplicated or done twice.
 */
describe.skipIf(!svc.nats)('an agent on its own host: registration, discovery, death and return', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  let agent: RoleProcess;

  beforeAll(async () => {
    db = svc.postgres ? await freshDatabase('nats_agent') : undefined;
    dep = new Deployment(svc.nats!, db?.url);
    await dep.conductor('conductor-a');
  }, 180_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it('registers the agent process and shows what it discovered', async () => {
    dep.logsOnFailure();
    agent = await dep.agent('node-a');
    const api = await dep.api();
    const accs = await eventually(() => (api.listAccelerators({ host: 'node-a' }).length === 2 ? api.listAccelerators({ host: 'node-a' }) : undefined), {
      what: 'two accelerators of node-a',
    });
    expect(accs.map((a) => a.state)).toEqual(['inactive', 'inactive']);
    const host = await eventually(() => (api.getHost('node-a').state === 'online' ? api.getHost('node-a') : undefined), { what: 'node-a online' });
    expect(host).toMatchObject({ epoch: 0, drivers: [{ name: 'fake', version: '1.0.0' }] });
  });

  it('loses nothing when the agent dies and comes back, and never runs a command twice', async () => {
    dep.logsOnFailure();
    const api = dep.client!;
    const [fpga, gpu] = [...api.listAccelerators({ host: 'node-a' })].sort((a, b) => a.deviceType.localeCompare(b.deviceType));
    await api.act(fpga!.id, { type: 'ENABLE' });
    expect((await api.act(gpu!.id, { type: 'ENABLE' })).state).toBe('ready');
    const attached = await api.attach(fpga!.id, { instanceUuid: '6e9b1c5e-8a1f-4c55-9d2b-5b2a4f1d0c11' });
    expect(attached.state).toBe('attached');

    // A command the conductor would send, with its idempotency key: done once by this process.
    const cmd = {
      op: 'program' as const,
      idempotencyKey: `test-${dep.prefix}`,
      host: 'node-a',
      deployableUuid: gpu!.id,
      driver: 'fake',
      params: { bitstreamId: 'b1' },
    };
    const first = await dep.bus!.request(Subjects.command('node-a'), CommandMessage, CommandReply, cmd, { timeoutMs: 10_000 });
    expect(first.ok).toBe(true);

    await agent.kill('SIGKILL');
    await eventually(() => api.getHost('node-a').state === 'lost', { what: 'node-a lost', timeoutMs: 60_000 });
    await eventually(() => api.listAccelerators({ host: 'node-a' }).every((a) => a.state === 'offline'), { what: 'accelerators offline' });
    expect(api.getAccelerator(fpga!.id).allocations).toHaveLength(1);

    agent = await dep.agent('node-a');
    await eventually(() => api.getHost('node-a').state === 'online' && api.getHost('node-a').epoch === 1, {
      what: 'node-a online again, epoch 1',
      timeoutMs: 60_000,
    });
    await eventually(() => api.getAccelerator(fpga!.id).state === 'attached' && api.getAccelerator(gpu!.id).state === 'ready', {
      what: 'accelerators back where they were',
    });
    const after = api.listAccelerators({ host: 'node-a' });
    expect(after).toHaveLength(2);
    expect(new Set(after.map((a) => a.id)).size).toBe(2);
    expect(api.getAccelerator(fpga!.id).allocations).toHaveLength(1);

    const again = await dep.bus!.request(Subjects.command('node-a'), CommandMessage, CommandReply, cmd, { timeoutMs: 10_000 });
    expect(again).toEqual(first);
    expect(agent.has((l) => l.msg === 'driver operation done' && l.op === 'program')).toBe(false);
    expect(agent.has((l) => l.msg === 'agent cache opened' && l.epoch === 1 && l.resumed === true)).toBe(true);
  });
});
