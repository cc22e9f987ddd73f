import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import { natsServerInstalled, PrivateNats } from '../nats/helpers.js';
import { nothingAcknowledgedUndone, novaLoad } from './nova-load.js';

/**
 * The NATS server is killed under Nova's ARQ load and started again on the same port: calls in
 * flight fail, every process reconnects, the api's view resyncs (a gap in its numbered views),
 * and nothing acknowledged is undone.
 */
describe.skipIf(!natsServerInstalled || !svc.postgres)('NATS killed and restarted under ARQ load', { timeout: 300_000 }, () => {
  let nats: PrivateNats;
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    db = await freshDatabase('fault_nats_restart');
    dep = new Deployment(nats.url, db.url);
    await dep.conductor('conductor-s');
    await dep.agent('node-s');
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await nats?.stop();
    await db?.drop();
  });

  it('every process comes back, and afterwards nothing acknowledged is undone', async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-s' }).length === 2, { what: 'node-s accelerators' });
    const accs = api.listAccelerators({ host: 'node-s' });
    for (const a of accs) expect((await api.act(a.id, { type: 'ENABLE' })).state).toBe('ready');

    const load = novaLoad(
      api,
      'node-s',
      accs.map((a) => a.rpUuid),
    );
    await eventually(() => load.cycles() >= 10, { what: 'ARQ cycles under way', timeoutMs: 60_000 });
    await nats.down();
    await new Promise((r) => setTimeout(r, 2_000));
    await nats.up();
    const after = load.cycles();
    await eventually(() => load.cycles() >= after + 10, { what: 'ARQ cycles after NATS returned', timeoutMs: 120_000 });
    await load.stop();
    expect(dep.procs.every((p) => p.alive)).toBe(true);
    await nothingAcknowledgedUndone(api, db.url, load.acks);
  }, 300_000);
});
