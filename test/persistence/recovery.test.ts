import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { act, ready, startStack } from './stack.js';

describe.skipIf(!svc.postgres)('persistence: the conductor rebuilds its actors after a restart (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let run: Running | undefined;

  beforeAll(async () => {
    db = await freshDatabase('recovery');
  });
  afterAll(async () => {
    await run?.stop();
    await db?.drop();
  });

  it('states, allocations, ARQs and history survive a restart; an operation cut short comes back as error "interrupted", an attach cut short as it was before, and the database says so', async () => {
    run = await startStack({ databaseUrl: db.url, nics: 1, vfsPerNic: 4, gpus: 2 });
    await ready(run, 7);
    const accs = run.conductor.listAccelerators();
    const [gpu1, gpu2] = accs.filter((a) => a.deviceType === 'GPU');
    const vfs = accs.filter((a) => a.deviceType === 'NIC');
    for (const a of [gpu1!, gpu2!, ...vfs.slice(0, 2)]) expect((await act(run, a.id, 'enable', `en-${a.id}`)).status).toBe(200);
    const instanceUuid = randomUUID();
    const attach = await run.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu1!.id}/attach`, payload: { instanceUuid } });
    expect(attach.statusCode).toBe(200);
    const arq = await run.conductor.createArq({ deviceProfileName: 'gpu-dp', deviceProfileGroupId: 0, projectId: 'p1' });
    const before = new Map(run.conductor.listAccelerators().map((a) => [a.id, a]));
    const historyBefore = await run.conductor.history(gpu1!.id);
    await run.stop();
    run = undefined;

    // A conductor killed while the agent was installing leaves this row behind.
    const victim = vfs[2]!;
    await query(
      db.url,
      `update accelerators set state = 'installing', context = jsonb_set(context, '{pending}', '{"op":"install","params":{}}') where id = $1`,
      [victim.id],
    );
    // …and this one, killed while the agent was attaching the second GPU for an instance.
    await query(db.url, `update accelerators set state = 'attaching', context = jsonb_set(context, '{pending}', '{"op":"attach","params":{}}') where id = $1`, [
      gpu2!.id,
    ]);

    run = await startStack({ databaseUrl: db.url, nics: 1, vfsPerNic: 4, gpus: 2 });
    await ready(run, 7);
    const after = new Map(run.conductor.listAccelerators().map((a) => [a.id, a]));
    for (const [id, a] of before) {
      if (id === victim.id || id === gpu2!.id) continue;
      expect(after.get(id), a.name).toMatchObject({ state: a.state, allocations: a.allocations, program: a.program });
    }
    expect(after.get(gpu1!.id)!.allocations).toEqual([expect.objectContaining({ instanceUuid })]);
    expect(after.get(gpu1!.id)!.state).toBe('attached');
    expect(after.get(victim.id)).toMatchObject({ state: 'error', error: { op: 'install', reason: 'interrupted' }, allowed: expect.arrayContaining(['RETRY']) });
    expect(run.conductor.getArq(arq.uuid)).toMatchObject({ state: 'Initial', deviceProfileName: 'gpu-dp', projectId: 'p1' });
    expect((await run.conductor.history(gpu1!.id)).slice(0, historyBefore.length)).toEqual(historyBefore);
    const victimLog = await run.conductor.history(victim.id);
    expect(victimLog.at(-1)).toMatchObject({ event: 'RECOVER', from: 'installing', to: 'error', reason: 'interrupted' });

    // The interrupted attach handed nothing to an instance: back to ready, and the database says
    // so too (not `attaching` under a view that says ready).
    expect(after.get(gpu2!.id)).toMatchObject({ state: 'ready', allocations: [], error: { op: 'attach', reason: 'interrupted' } });
    expect((await run.conductor.history(gpu2!.id)).at(-1)).toMatchObject({ event: 'RECOVER', from: 'attaching', to: 'ready', reason: 'interrupted' });
    const rows = await query<{ state: string }>(db.url, 'select state from accelerators where id = $1', [gpu2!.id]);
    expect(rows.map((r) => r.state)).toEqual(['ready']);

    // …and the operator can retry the install.
    const retry = await act(run, victim.id, 'retry', 'retry-1');
    expect(retry.status).toBe(200);
    expect(retry.body.state).toBe('ready');
  });
});
