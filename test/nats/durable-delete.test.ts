import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArqView } from '../../model/index.js';
import { freshDatabase, query } from '../support/database.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * Nova deletes the ARQs of two instances while the compute host's agent is down, and the
 * conductor is then killed (SIGKILL) before it could release anything. The deletes were
 * acknowledged, so they happen: while no conductor runs a delete is refused (never acknowledged
 * without a recorded intent); the restarted conductor finds the intents in the database and,
 * once the agent is back, releases every accelerator and removes every ARQ. No allocation is
 * left, no accelerator stays in `error`.
 */
describe.skipIf(!svc.nats || !svc.postgres)('acknowledged ARQ deletes across an agent outage and a conductor kill', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let conductor: RoleProcess;
  let agent: RoleProcess;

  beforeAll(async () => {
    db = await freshDatabase('nats_durable_delete');
    dep = new Deployment(svc.nats!, db.url);
    conductor = await dep.conductor('conductor-d');
    agent = await dep.agent('node-d');
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  const arqRows = async (): Promise<string[]> => (await query<{ uuid: string }>(db.url, 'select uuid from extended_accelerator_requests')).map((r) => r.uuid);
  const allocations = async (): Promise<{ id: string; state: string; held: number }[]> =>
    (await query<{ id: string; state: string; context: { allocations?: unknown[] } }>(db.url, 'select id, state, context from accelerators')).map((r) => ({
      id: r.id,
      state: r.state,
      held: r.context.allocations?.length ?? 0,
    }));

  it('finishes every acknowledged delete after the restart, with every accelerator released', async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-d' }).length === 2, { what: 'node-d accelerators' });
    const accs = api.listAccelerators({ host: 'node-d' });
    const arqs: ArqView[] = [];
    for (const [i, acc] of accs.entries()) {
      expect((await api.act(acc.id, { type: 'ENABLE' })).state).toBe('ready');
      const arq = await api.createArq({ deviceProfileName: 'p', deviceProfileGroupId: 0, projectId: 'p1' });
      expect((await api.bindArq(arq.uuid, { hostname: 'node-d', deviceRpUuid: acc.rpUuid, instanceUuid: `vm-${i}` })).state).toBe('Bound');
      arqs.push(arq);
    }
    expect((await allocations()).every((a) => a.held === 1)).toBe(true);

    // The agent is gone: the deletes are answered with their recorded intent, not carried out.
    await agent.kill('SIGKILL');
    for (const arq of arqs) expect((await api.deleteArq(arq.uuid)).cyborgState).toMatch(/^Delet/);
    expect((await arqRows()).sort()).toEqual(arqs.map((a) => a.uuid).sort());

    // The conductor dies; a delete now reaches nobody who could record it: never acknowledged —
    // refused (no responder), or, while NATS still holds the dead conductor's subscription, its
    // outcome unknown when the api's wait runs out (504: read it back), never a 503.
    await conductor.kill('SIGKILL');
    await expect(api.deleteArq(arqs[0]!.uuid)).rejects.toMatchObject({ code: expect.stringMatching(/^bus\.no_responder$|^request\.outcome_unknown$/) });

    conductor = await dep.conductor('conductor-d');
    agent = await dep.agent('node-d');
    await eventually(async () => (await arqRows()).length === 0, { what: 'every deleted ARQ gone from the database', timeoutMs: 90_000 });
    await eventually(async () => (await allocations()).every((a) => a.held === 0 && a.state === 'ready'), {
      what: 'every accelerator released and ready',
      timeoutMs: 60_000,
    });
    expect(conductor.has((l) => l.msg === 'reconciling unfinished ARQ deletes and unbinds')).toBe(true);
  });
});
