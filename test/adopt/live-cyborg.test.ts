import { randomBytes, randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { cyborgProcess, errorLines } from '../cli/spawn.js';
import { placementAuthFor, placementEnvFor } from '../keystone/placement-auth.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';
import { checksum, cyborgRows, MARIADB, mariadbUp } from './cyborg-db.js';
import { cutOver, novaInstalled, novaScript, targetRows, type CutOver, type NovaCalls } from './cut-over.js';
import { liveCyborg, novaEvents, rabbitUp, whyNoCyborg, type LiveCyborg } from './live-cyborg.js';

const PROJECT = '7acee29c852d4c0ab3764d118be2a3b4';
/** keystonemiddleware's headers, as Cyborg's api-paste.ini without authtoken reads them (the caller: Nova's service user). */
const HEADERS = { 'X-Roles': 'admin,member,reader', 'X-User-Id': 'nova', 'X-Project-Id': PROJECT };

const why =
  whyNoCyborg() ??
  (!mariadbUp ? `MariaDB (${MARIADB}) is not reachable` : undefined) ??
  (!(await rabbitUp()) ? 'RabbitMQ is not reachable (RABBITMQ_URL)' : undefined) ??
  (!svc.postgres ? 'PostgreSQL is not reachable' : undefined) ??
  (!svc.placement ? 'no Placement (PLACEMENT_URL)' : undefined) ??
  (!novaInstalled ? "python3-nova is not installed: Nova's client code binds the ARQs" : undefined);
if (why) process.stdout.write(`live Cyborg story skipped: ${why}\n`);

interface Made {
  calls: number;
  groups: Record<string, string>[];
  bound: string[];
  initial: string[];
  bogus: string | null;
}

/**
 * The move from a running OpenStack Cyborg (issue 40), end to end: Cyborg 9.0.0's own
 * cyborg-api, cyborg-conductor and cyborg-agent (fake driver) from CYBORG_SOURCE against MariaDB,
 * RabbitMQ and the real Placement; a device profile, and ARQs bound through Nova's own client code
 * (python3-nova) as nova-compute binds them; Cyborg stopped; `cyborg adopt`; our roles started on
 * the adopted database; then Nova's calls on the adopted ARQs (list and read by instance, delete
 * by instance, a new bind on a free device), with Placement's provider creates and deletes
 * counted at the cut-over: none.
 */
describe.skipIf(why !== undefined)('moving in from a running OpenStack Cyborg', () => {
  const tag = randomBytes(3).toString('hex');
  const host = `live-${tag}`;
  const database = `cyborg_live_${tag}`;
  const rpName = `${host}_FakeDevice`;
  const rp = uuid3(NAMESPACE_DNS, rpName);
  const [a, b, fresh] = [randomUUID(), randomUUID(), randomUUID()];
  let placement: PlacementClient;
  let root: string;
  let cyborg: LiveCyborg | undefined;
  let nova: Awaited<ReturnType<typeof novaEvents>> | undefined;
  let target: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  let ours: CutOver | undefined;

  beforeAll(async () => {
    placement = new PlacementClient({ url: svc.placement!, timeoutMs: 30_000, ...placementAuthFor(svc.placement!) });
    const m = await mysql.createConnection({ uri: MARIADB });
    await m.query(`CREATE DATABASE ${database}`);
    await m.end();
    // The compute node's provider, as nova-compute made it: Cyborg's conductor puts its devices under it.
    root = (await placement.createProvider({ uuid: randomUUID(), name: host })).uuid;
    nova = await novaEvents(await freePort());
    const k = placementEnvFor(svc.placement!);
    cyborg = liveCyborg({
      host,
      database,
      exchange: `cyborg_live_${tag}`,
      apiPort: await freePort(),
      placementUrl: svc.placement!,
      ...(k.PLACEMENT_AUTH_URL
        ? { keystone: { authUrl: k.PLACEMENT_AUTH_URL, username: k.PLACEMENT_USERNAME!, password: k.PLACEMENT_PASSWORD!, project: k.PLACEMENT_PROJECT_NAME! } }
        : {}),
      novaUrl: nova.url,
    });
  }, 60_000);

  afterAll(async () => {
    await ours?.stop();
    await cyborg?.stop();
    await nova?.close();
    for (const i of [a, b, fresh]) await placement.deleteAllocations(i).catch(() => undefined);
    for (const consumer of Object.keys(await placement.providerAllocations(rp).catch(() => ({})))) await placement.deleteAllocations(consumer);
    await placement.deleteProvider(rp).catch(() => undefined);
    if (root) await placement.deleteProvider(root).catch(() => undefined);
    const m = await mysql.createConnection({ uri: MARIADB });
    await m.query(`DROP DATABASE IF EXISTS ${database}`);
    await m.end();
    await target?.drop();
    cyborg?.remove();
  }, 60_000);

  it("Cyborg's ARQs bound through Nova survive the move: adopted, 0 providers created or deleted, Nova's calls answered by ours", async () => {
    try {
      await story();
    } catch (err) {
      // What Cyborg's services said is the first thing to read when the story fails.
      if (err instanceof Error) err.message += `\n${cyborg!.logs()}`;
      throw err;
    }
  }, 300_000);

  async function story(): Promise<void> {
    const live = cyborg!;
    const started = Date.now();
    // Cyborg, as it runs in a cloud.
    await live.dbsync();
    live.start('conductor');
    live.start('api');
    // The agent reports once at start, then every minute: the conductor must be listening by then.
    await eventually(() => /Created RPC server for service cyborg-conductor/.test(live.log('conductor')), {
      what: "cyborg-conductor's RPC server",
      timeoutMs: 60_000,
    });
    live.start('agent');
    const dep = await eventually(async () => (await cyborgRows(database, 'deployables').catch(() => [])).find((d) => d.rp_uuid === rp), {
      what: "Cyborg's conductor storing the agent's fake device under its provider",
      timeoutMs: 90_000,
    });
    expect(dep.name).toBe(rpName);
    expect((await placement.getProvider(rp))?.parent_provider_uuid).toBe(root);

    // The scheduler's allocations, then Nova binding (its own client code): two instances, one ARQ
    // left Initial, one bound on a provider Cyborg does not know (it stays BindStarted).
    for (const i of [a, b])
      await placement.putAllocations(i, { allocations: { [rp]: { resources: { FPGA: 1 } } }, project_id: PROJECT, user_id: 'nova', consumer_generation: null });
    const cyborgApi = live.apiUrl;
    await eventually(async () => (await fetch(`${cyborgApi}/v2`)).ok, { what: 'cyborg-api answering' });
    const made = await fetch(`${cyborgApi}/v2/device_profiles`, {
      method: 'POST',
      headers: { ...HEADERS, 'content-type': 'application/json' },
      body: JSON.stringify([{ name: 'fpga-1', description: 'one fake FPGA', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }]),
    });
    expect(made.status, await made.clone().text()).toBe(201);
    const bind = (instance: string) => ({ hostname: host, rp, instance });
    const arqs = await novaScript<Made>('nova_binds.py', `${cyborgApi}/v2`, {
      headers: HEADERS,
      profile: 'fpga-1',
      bind: [bind(a), bind(b)],
      initial: 1,
      bogus: { hostname: host, rp: randomUUID(), instance: randomUUID() },
    });
    expect(arqs.groups).toEqual([{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }]);
    const states = Object.fromEntries((await cyborgRows(database, 'extended_accelerator_requests')).map((r) => [r.uuid, r.state]));
    expect(states).toEqual({ [arqs.bound[0]!]: 'Bound', [arqs.bound[1]!]: 'Bound', [arqs.initial[0]!]: 'Initial', [arqs.bogus!]: 'BindStarted' });
    expect(nova!.events.map((e) => [e.server_uuid, e.status])).toEqual([
      [a, 'completed'],
      [b, 'completed'],
    ]);
    const cyborgMs = Date.now() - started;

    // The move: Cyborg stopped, all of it at once (docs/adopt.md), then the dry run and the adoption.
    await live.stop();
    const providersBefore = (await placement.providersInTree(root)).map((p) => [p.uuid, p.name]).sort();
    const before = await checksum(database);
    target = await freshDatabase('adoptlive');
    const from = `mysql+pymysql://root@127.0.0.1:3306/${database}`;
    const adopt = (args: string[] = []) => cyborgProcess(['adopt', '--from', from, ...args], { env: { DATABASE_URL: target!.url }, timeoutMs: 90_000 });
    const dry = await adopt(['--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.trim().split('\n').at(-1)).toMatch(/^verdict: adoptable: \d+ rows of 1 hosts would be imported/);
    const run = await adopt();
    expect(run.code, run.stderr).toBe(0);
    expect(errorLines(run.stderr)).toEqual([]);
    const verdict = run.stdout.trim().split('\n').at(-1)!;
    const rows = Number(/^verdict: adopted (\d+) rows of 1 hosts .* 0 skipped$/.exec(verdict)?.[1]);
    // One profile, one device, one control path, one deployable, its 2 attributes and 16 handles, 4 ARQs.
    expect(rows, verdict).toBe(1 + 1 + 1 + 1 + 2 + 16 + 4);
    expect(await checksum(database)).toBe(before);
    // Cyborg's states kept; the bind Cyborg left under way is failed "interrupted" (Nova's bind wait timed out long ago).
    const adopted = await targetRows(target.url, 'select uuid, state, instance_uuid from extended_accelerator_requests');
    expect(Object.fromEntries(adopted.map((r) => [r.uuid, r.state]))).toEqual({
      [arqs.bound[0]!]: 'Bound',
      [arqs.bound[1]!]: 'Bound',
      [arqs.initial[0]!]: 'Initial',
      [arqs.bogus!]: 'BindFailed',
    });

    // Ours start on the adopted database: the first report reconciles, no provider made or removed.
    ours = await cutOver(host, target.url);
    expect(ours.accelerators.map((x) => [x.rpUuid, x.state])).toEqual([[rp, 'attached']]);
    expect(ours.accelerators[0]!.allocations?.map((x) => x.instanceUuid).sort()).toEqual([a, b].sort());
    expect(ours.writes()).toMatchObject({ creates: 0, deletes: 0 });
    expect((await placement.providersInTree(root)).map((p) => [p.uuid, p.name]).sort()).toEqual(providersBefore);
    expect((await placement.getUsages(rp)).FPGA).toBe(2);
    // No inventory flapping, allocations untouched; one trait write may add OWNER_CYBORG (docs/adopt.md).
    const atCutOver = ours.writes();
    expect(atCutOver).toMatchObject({ creates: 0, deletes: 0, inventories: 0, allocations: 0 });
    expect(atCutOver.traits).toBeLessThanOrEqual(1);

    // Nova on the adopted ARQs: a hard reboot's read, a teardown, a new instance's bind on a free device.
    const url = await ours.stack.app.listen({ host: '127.0.0.1', port: 0 });
    const calls = await novaScript<NovaCalls>('nova_calls.py', `${url}/v2`, {
      list: a,
      delete: b,
      bind: { profile: 'fpga-1', hostname: host, rp, instance: fresh },
    });
    expect(calls.list).toEqual([
      expect.objectContaining({ uuid: arqs.bound[0], state: 'Bound', hostname: host, device_rp_uuid: rp, instance_uuid: a, attach_handle_type: 'TEST_PCI' }),
    ]);
    expect(calls.by_uuid).toEqual(calls.list);
    expect(calls.delete_before).toEqual([arqs.bound[1]]);
    expect(calls.delete_after).toEqual([]);
    expect(calls.bound).toEqual([
      expect.objectContaining({ state: 'Bound', hostname: host, device_rp_uuid: rp, instance_uuid: fresh, attach_handle_type: 'TEST_PCI' }),
    ]);
    const handles = [calls.list[0]!.attach_handle_info, calls.bound[0]!.attach_handle_info].map((h) => JSON.stringify(h));
    expect(new Set(handles).size, 'the new bind takes a free handle, not the adopted one').toBe(2);
    expect(ours.writes()).toMatchObject({ creates: 0, deletes: 0 });

    process.stdout.write(
      `live Cyborg story: Cyborg ${Math.round(cyborgMs / 1000)} s, ${arqs.calls} Nova calls on Cyborg; adopted ${rows} rows (${verdict}); ` +
        `Placement writes at the cut-over ${JSON.stringify(atCutOver)}, then with Nova's calls ${JSON.stringify(ours.writes())}; Nova calls passed on ours: ${calls.calls}; total ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  }
});
