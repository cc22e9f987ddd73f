/**
 * Regression (found by the rolling-upgrade story under a loaded machine, issue 41): an operator's
 * disable whose agent was slow to answer (restarting, loaded) was answered 503 by the api after
 * its 5 s wait — the conductor answered only once the driver operation ended, and the api's read
 * model did not show the card busy yet — while the uninstall went on and landed; the operator's
 * retry then met 409 "inactive". A 503 must mean "not done".
 *
 * Now the card's holder answers an operator's write within `answerWithinMs` (2 s, below the api's
 * wait) whatever the driver does: with the outcome if the operation has ended, else as it stands,
 * its `…ing` step committed — the api's 202 and Location — and the card settles later. Real
 * PostgreSQL, the all-in-one role, a fake driver that takes 4 s an operation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { act, ready, requestIdOf, startStack } from '../persistence/stack.js';

const OP_MS = 4_000;

describe.skipIf(!svc.postgres)('an operator write whose driver operation is slow (PostgreSQL)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let run: Running;

  beforeAll(async () => {
    db = await freshDatabase('regr_under_way');
    run = await startStack({ databaseUrl: db.url, nics: 0, gpus: 1, opDelayMs: OP_MS });
    await ready(run, 1);
  }, 60_000);
  afterAll(async () => {
    await run?.stop();
    await db?.drop();
  });

  const stored = async (id: string): Promise<string | undefined> =>
    (await query<{ state: string }>(db.url, 'select state from accelerators where id = $1', [id]))[0]?.state;

  it('is answered 202 under way before the operation ends, its step committed, and settles after', async () => {
    const id = run.conductor.listAccelerators()[0]!.id;
    const enable = await act(run, id, 'enable', requestIdOf('under-way-enable'));
    expect(enable.status).toBe(202);
    expect(enable.body.state).toBe('installing');
    // What the answer said is what the database holds: the answer came after its commit.
    expect(await stored(id)).toBe('installing');
    await eventually(async () => (await stored(id)) === 'ready', { what: 'the card enabled', timeoutMs: 20_000 });

    const disable = await act(run, id, 'disable', requestIdOf('under-way-disable'));
    expect(disable.status).toBe(202);
    expect(disable.body.state).toBe('uninstalling');
    expect(await stored(id)).toBe('uninstalling');
    await eventually(async () => (await stored(id)) === 'inactive', { what: 'the card disabled', timeoutMs: 20_000 });
    expect(run.conductor.getAccelerator(id).state).toBe('inactive');
  });
});
