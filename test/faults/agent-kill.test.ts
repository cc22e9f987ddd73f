import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import type { RoleProcess } from '../nats/helpers.js';
import { nothingAcknowledgedUndone, novaLoad } from './nova-load.js';

/**
 * Nova cycles ARQs (create, bind, delete) on a compute host while its agent is killed (SIGKILL)
 * and comes back. Whatever was acknowledged holds: every created ARQ whose delete was not sent
 * is in the database, every acknowledged delete is done, no accelerator holds a handle of an ARQ
 * that is gone (an attach the agent finishes late, for an ARQ already failed and deleted, is
 * released by the conductor's sweep), and the api's view equals the database.
 */
describe.skipIf(!svc.nats || !svc.postgres)('agent killed under ARQ load', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let agent: RoleProcess;

  beforeAll(async () => {
    db = await freshDatabase('fault_agent_kill');
    dep = new Deployment(svc.nats!, db.url);
    await dep.conductor('conductor-k');
    agent = await dep.agent('node-k');
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it('keeps every acknowledged create and delete, leaks no handle, and the view equals the database', async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-k' }).length === 2, { what: 'node-k accelerators' });
    const accs = api.listAccelerators({ host: 'node-k' });
    for (const a of accs) expect((await api.act(a.id, { type: 'ENABLE' })).state).toBe('ready');

    const load = novaLoad(
      api,
      'node-k',
      accs.map((a) => a.rpUuid),
    );
    await eventually(() => load.cycles() >= 10, { what: 'ARQ cycles under way', timeoutMs: 60_000 });
    await agent.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 3_000));
    agent = await dep.agent('node-k');
    const after = load.cycles();
    await eventually(() => load.cycles() >= after + 10, { what: 'ARQ cycles after the agent returned', timeoutMs: 90_000 });
    await load.stop();
    // Acknowledged deletes finish, perhaps after the agent is back: the reconciliation's work.
    await nothingAcknowledgedUndone(api, db.url, load.acks);
  }, 420_000);
});
