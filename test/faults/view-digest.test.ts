import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteControlPlane, serveControlPlane, ViewPublisher, type ReadModel } from '../../control/index.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * The api's view is the database's committed state, and a background check keeps it so: an api
 * whose view lost a views message (here: altered behind its back) notices at its second check —
 * the database's digest, read by a conductor from PostgreSQL, differs where the view has not moved
 * — and rebuilds its view, which then matches again.
 */
describe.skipIf(!svc.postgres)('the api compares its view with the database and heals it (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let run: Stack;
  let api: RemoteControlPlane;
  let publisher: ViewPublisher;
  let stopServing: () => void;

  beforeAll(async () => {
    db = await freshDatabase('view_digest');
    run = await startStack({ journal: { databaseUrl: db.url }, log: quietLogger() });
    publisher = new ViewPublisher(run.bus, run.conductor, 'c1');
    stopServing = serveControlPlane({ bus: run.bus, conductor: run.conductor, conductorId: 'c1', publisher, timeoutMs: 5_000, log: quietLogger() });
    api = new RemoteControlPlane(run.bus, quietLogger(), 5_000);
    await api.start();
  });
  afterAll(async () => {
    api?.stop();
    stopServing?.();
    publisher?.stop();
    await run?.stop();
    await db?.drop();
  });

  it('equal after writes, lasting differences rebuilt, the view equal again', async () => {
    const fpga = run.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await run.conductor.act(fpga.id, { type: 'ENABLE' });
    const arq = await run.conductor.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    await eventually(async () => (await api.viewCheck.check()) === 'equal', { what: 'the view to equal the database' });

    // Two views messages lost: the ARQ never shown, the enable never seen.
    const model = (api as unknown as { model: ReadModel }).model;
    model.arqs.delete(arq.uuid);
    model.putAccelerator({ ...model.accelerators.get(fpga.id)!, state: 'inactive', generation: Number.MAX_SAFE_INTEGER });
    expect(await api.viewCheck.check()).toBe('differs');
    expect(await api.viewCheck.check()).toBe('resynced');
    expect(api.notReady()).toMatch(/view differs from the database/);
    await eventually(() => api.notReady() === undefined, { what: 'the rebuild' });
    expect(api.getAccelerator(fpga.id).state).toBe('ready');
    expect(api.getArq(arq.uuid).state).toBe('Initial');
    expect(await api.viewCheck.check()).toBe('equal');
    expect(api.viewCheck.resyncs).toBe(1);
  });
});
