import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import type { RoleProcess } from '../nats/helpers.js';
import { PgProxy } from '../persistence/pg-proxy.js';
import { nothingAcknowledgedUndone, novaLoad } from './nova-load.js';

const readyz = async (url: string): Promise<{ status: number; checks: Record<string, string> }> => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, checks: ((await res.json()) as { checks: Record<string, string> }).checks };
};

/**
 * The conductor's PostgreSQL goes away under Nova's ARQ load and comes back. Meanwhile the api
 * role's `/readyz` says why it cannot take writes; afterwards everything recovers by itself and
 * nothing acknowledged is undone.
 */
describe.skipIf(!svc.nats || !svc.postgres)('PostgreSQL away under ARQ load', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let proxy: PgProxy;
  let conductor: RoleProcess;

  beforeAll(async () => {
    db = await freshDatabase('fault_db_outage');
    proxy = await PgProxy.forUrl(db.url).start();
    dep = new Deployment(svc.nats!, proxy.rewrite(db.url));
    conductor = await dep.conductor('conductor-o');
    await dep.agent('node-o');
  }, 240_000);
  afterAll(async () => {
    proxy?.restore();
    await dep?.stop();
    await proxy?.stop();
    await db?.drop();
  });

  it('the api role is not ready while it lasts, and afterwards nothing acknowledged is undone', async () => {
    dep.logsOnFailure();
    const role = await dep.apiRole('api-o');
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-o' }).length === 2, { what: 'node-o accelerators' });
    const accs = api.listAccelerators({ host: 'node-o' });
    for (const a of accs) expect((await api.act(a.id, { type: 'ENABLE' })).state).toBe('ready');
    await eventually(async () => (await readyz(role.url)).status === 200, { what: 'the api role ready' });

    const load = novaLoad(
      api,
      'node-o',
      accs.map((a) => a.rpUuid),
    );
    await eventually(() => load.cycles() >= 10, { what: 'ARQ cycles under way', timeoutMs: 60_000 });
    proxy.cut();
    const away = await eventually(
      async () => {
        const r = await readyz(role.url);
        return r.status === 503 && /database/.test(r.checks.conductor ?? '') ? r : undefined;
      },
      { what: "the api role to say the conductor's database is away", timeoutMs: 15_000 },
    );
    expect(away.checks.conductor).toMatch(/conductor-o: database/);
    await new Promise((r) => setTimeout(r, 2_000));
    proxy.restore();

    await eventually(async () => (await readyz(role.url)).status === 200, { what: 'the api role ready again', timeoutMs: 60_000 });
    const after = load.cycles();
    await eventually(() => load.cycles() >= after + 10, { what: 'ARQ cycles after the database returned', timeoutMs: 90_000 });
    await load.stop();
    expect(conductor.alive).toBe(true);
    await nothingAcknowledgedUndone(api, db.url, load.acks);
  }, 300_000);
});
