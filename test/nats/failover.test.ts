import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * Two conductors share the hosts through leases in JetStream KV, with PostgreSQL behind them.
 * The one holding the agent's host is killed (SIGKILL). Once its lease expires the other takes
 * the host over, rebuilt from the database: every transition that was acknowledged is there, and
 * operations go on through the survivor.
 */
describe.skipIf(!svc.nats || !svc.postgres)('conductor fail-over', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const conductors = new Map<string, RoleProcess>();

  beforeAll(async () => {
    db = await freshDatabase('nats_failover');
    dep = new Deployment(svc.nats!, db.url);
    conductors.set('conductor-1', await dep.conductor('conductor-1'));
    conductors.set('conductor-2', await dep.conductor('conductor-2'));
    await dep.agent('node-f');
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  it("takes the dead conductor's host over and loses no acknowledged transition", async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-f' }).length === 2, { what: 'node-f accelerators' });
    const [fpga, gpu] = [...api.listAccelerators({ host: 'node-f' })].sort((a, b) => a.deviceType.localeCompare(b.deviceType));
    // Acknowledged: each call returns only after its transitions are committed.
    expect((await api.act(gpu!.id, { type: 'ENABLE' })).state).toBe('ready');
    expect((await api.act(gpu!.id, { type: 'PROGRAM', bitstreamId: 'bs-1' })).state).toBe('programmed');
    expect((await api.act(fpga!.id, { type: 'ENABLE' })).state).toBe('ready');

    const owner = await eventually(
      async () => {
        for (const id of conductors.keys()) {
          const s = await dep.stats('conductor', id).catch(() => undefined);
          if (s && s.ownedHosts === 1) return id;
        }
        return undefined;
      },
      { what: 'the conductor holding node-f' },
    );
    const survivor = [...conductors.keys()].find((id) => id !== owner)!;
    await conductors.get(owner)!.kill('SIGKILL');

    await conductors
      .get(survivor)!
      .waitLog(
        (l) => l.msg === 'took over the hosts of an expired conductor lease' || l.msg === 'took over a host whose conductor lease expired',
        'takeover',
        90_000,
      );
    await eventually(async () => (await dep.stats('conductor', survivor)).ownedHosts === 1, { what: 'survivor owns node-f', timeoutMs: 60_000 });

    // The survivor's state, rebuilt from the database, holds every acknowledged transition.
    const history = await api.history(gpu!.id);
    const path = history.map((t) => `${t.from}>${t.to}`);
    expect(path).toEqual(expect.arrayContaining(['inactive>installing', 'installing>ready', 'ready>programming', 'programming>programmed']));
    await eventually(() => api.getHost('node-f').state === 'online', { what: 'node-f online under the survivor', timeoutMs: 60_000 });
    expect(api.getAccelerator(gpu!.id)).toMatchObject({ state: 'programmed', program: { bitstreamId: 'bs-1' } });

    // Operations go on through the survivor; nothing was duplicated.
    expect((await api.act(fpga!.id, { type: 'DISABLE' })).state).toBe('inactive');
    expect(api.listAccelerators({ host: 'node-f' })).toHaveLength(2);
  });
});
