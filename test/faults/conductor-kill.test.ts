import { afterEach, describe, expect, it } from 'vitest';
import type { RemoteControlPlane } from '../../control/client.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from '../nats/deployment.js';
import { nothingAcknowledgedUndone, novaLoad } from './nova-load.js';

describe.skipIf(!svc.nats || !svc.postgres)('conductor killed (SIGKILL) under ARQ load', { timeout: 300_000 }, () => {
  let dep: Deployment | undefined;
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  afterEach(async () => {
    await dep?.stop();
    await db?.drop();
    dep = undefined;
    db = undefined;
  });

  const start = async (name: string, conductors: string[]): Promise<{ api: RemoteControlPlane; rps: string[] }> => {
    db = await freshDatabase(name);
    dep = new Deployment(svc.nats!, db.url);
    dep.logsOnFailure();
    await dep.conductor(conductors[0]);
    await dep.agent('node-c');
    for (const c of conductors.slice(1)) await dep.conductor(c);
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-c' }).length === 2, { what: 'node-c accelerators' });
    const accs = api.listAccelerators({ host: 'node-c' });
    for (const a of accs) expect((await api.act(a.id, { type: 'ENABLE' })).state).toBe('ready');
    return { api, rps: accs.map((a) => a.rpUuid) };
  };

  it('with one conductor, restarted by its supervisor: nothing acknowledged is undone', async () => {
    const { api, rps } = await start('fault_conductor_kill_1', ['kill-c1']);
    const load = novaLoad(api, 'node-c', rps);
    await eventually(() => load.cycles() >= 10, { what: 'ARQ cycles under way', timeoutMs: 60_000 });
    await dep!.procs.find((p) => p.name === 'kill-c1')!.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1_000));
    await dep!.conductor('kill-c1');
    const after = load.cycles();
    await eventually(() => load.cycles() >= after + 10, { what: 'ARQ cycles after the restart', timeoutMs: 90_000 });
    await load.stop();
    await nothingAcknowledgedUndone(api, db!.url, load.acks);
  }, 300_000);

  it('with two conductors, the survivor taking over: nothing acknowledged is undone', async () => {
    const { api, rps } = await start('fault_conductor_kill_2', ['kill-a', 'kill-b']);
    const load = novaLoad(api, 'node-c', rps);
    await eventually(() => load.cycles() >= 10, { what: 'ARQ cycles under way', timeoutMs: 60_000 });
    // The first conductor holds the host (it was alone when the agent registered); the ARQ home
    // is wherever the first ARQ call landed. Either way the survivor must take over what it held.
    await dep!.procs.find((p) => p.name === 'kill-a')!.kill('SIGKILL');
    const after = load.cycles();
    await eventually(() => load.cycles() >= after + 10, { what: 'ARQ cycles on the survivor', timeoutMs: 90_000 });
    await load.stop();
    await nothingAcknowledgedUndone(api, db!.url, load.acks);
  }, 300_000);
});
