import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenericDriver, SimulatedOps } from '../../drivers/generic/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { configFor } from '../persistence/stack.js';
import { svc } from '../services.js';
import { GPU_TREE } from '../support/fixtures.js';

describe.skipIf(!svc.postgres)('driver states survive a restart of the whole all-in-one (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let run: Running | undefined;
  const host = 'pg-gpu-host';

  /** The all-in-one as `cyborg all-in-one` wires it, with the generic driver over the GPU fixture tree. */
  const start = async (): Promise<Running> => {
    const generic = new GenericDriver({ host, sysfsRoot: GPU_TREE, ops: new SimulatedOps(), version: '1.0.0' });
    run = await startAllInOne(configFor({ databaseUrl: db.url, host, gpus: 0, nics: 0 }), quietLogger(), { drivers: [generic] });
    return run;
  };
  const restart = async (): Promise<Running> => {
    await run!.stop();
    run = undefined;
    return start();
  };

  beforeAll(async () => {
    db = await freshDatabase('drivers');
  });
  afterAll(async () => {
    await run?.stop();
    await db?.drop();
  });

  it('an uninstalled driver stays uninstalled and an updated one keeps its version, across restarts', async () => {
    let r = await start();
    await r.conductor.driverAdmin.uninstallDriver('generic', {});
    r = await restart();
    expect(r.conductor.driverAdmin.getDriver('generic')).toMatchObject({ state: 'uninstalled', version: '1.0.0' });
    expect(r.agent.driverStates.active().map((d) => d.name)).toEqual(['fake']);
    expect(r.conductor.listAccelerators().filter((a) => a.driver === 'generic' && a.state !== 'removed')).toEqual([]);

    await r.conductor.driverAdmin.installDriver('generic', { version: '1.4.0' });
    await r.conductor.driverAdmin.discoverServices({});
    r = await restart();
    expect(r.conductor.driverAdmin.getDriver('generic')).toMatchObject({ state: 'installed', version: '1.4.0', accelerators: 4 });
    expect(r.agent.driverStates.info()).toContainEqual({ name: 'generic', version: '1.4.0' });
    expect(r.conductor.driverAdmin.listServices({ driver: 'generic' })).toHaveLength(6);
  });
});
