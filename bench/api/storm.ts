/**
 * bench:api's boot storm: N Nova-style boots at once (default 200: create → bind → poll until
 * resolved → delete by instance), each on a slot of its own, against a distributed deployment —
 * one `cyborg conductor` process on real NATS and PostgreSQL, the api (RemoteControlPlane) and
 * --storm-hosts fake hosts' agents (default 20, 10 GPUs each: 200 slots) in a process of their
 * own. Prints p50/p99 per boot and failures, for this tree and — with `--baseline <ref>` (e.g. the
 * last landed commit) — for that commit, checked out as a git worktree under /tmp, in the same run.
 *
 * Run directly (`tsx bench/api/storm.ts`) it is that process: one deployment, its storms, one
 * `STORM {json}` line. Written against interfaces that older commits have too, so that the same
 * file runs in a baseline's worktree.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import pLimit from 'p-limit';
import { pino } from 'pino';
import { Pool } from 'undici';
import { Agent } from '../../actors/agent/index.js';
import { buildApi } from '../../api/server.js';
import { connectBus } from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { RemoteControlPlane } from '../../control/index.js';
import { migrate, openOrm } from '../../db/index.js';
import { FakeDriver, DriverRegistry } from '../../drivers/index.js';
import { call, pct } from './lifecycle.js';
import { admin, PG, startedWhenReady, until } from './setup.js';

const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const ROOT = join(import.meta.dirname, '..', '..');

export interface StormOptions {
  boots: number;
  hosts: number;
  rounds: number;
  baseline?: string;
  /** With a baseline: how many times the two trees alternate (baseline first), medians printed. */
  pairs?: number;
}

/** What one deployment's storms measured (the child's `STORM` line). */
export interface StormResult {
  boots: number;
  failures: number;
  p50: number;
  p99: number;
  max: number;
  wallS: number;
  firstError?: string;
  /** p50 of each request of a boot, ms. */
  steps?: Record<Step, number>;
  /** CPU seconds spent during the storms by the conductor process and by the api + agents + clients process. */
  cpuS?: { conductor: number; api: number };
}

type Step = 'create' | 'bind' | 'resolved' | 'delete';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU seconds a process has used, from /proc (Linux; 0 elsewhere). */
function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** One boot and delete on `slot`, as nova-conductor and nova-compute call Cyborg; its milliseconds. */
async function boot(pool: Pool, slot: { host: string; rpUuid: string }, steps?: Record<Step, number[]>): Promise<number> {
  const t = performance.now();
  let last = t;
  const lap = (s: Step): void => {
    const now = performance.now();
    steps?.[s].push(now - last);
    last = now;
  };
  const instance = randomUUID();
  const created = await call(pool, 'POST', '/v2/accelerator_requests', { device_profile_name: 'storm-dp' });
  if (created.status !== 201) throw new Error(`create: ${created.status}`);
  const uuid = (created.json as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  lap('create');
  const bound = await call(pool, 'PATCH', '/v2/accelerator_requests', {
    [uuid]: [
      { op: 'add', path: '/hostname', value: slot.host },
      { op: 'add', path: '/device_rp_uuid', value: slot.rpUuid },
      { op: 'add', path: '/instance_uuid', value: instance },
    ],
  });
  if (bound.status !== 202) throw new Error(`bind: ${bound.status} ${JSON.stringify(bound.json)}`);
  lap('bind');
  for (;;) {
    const r = await call(pool, 'GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`);
    if (r.status === 200) {
      // What Nova starts the VM with: a resolved ARQ that names its attach handle (bound), not
      // one that failed. Asked of the wire, not by state name, so that older commits run it too.
      const arq = (r.json as { arqs: { state: string; attach_handle_uuid: string | null }[] }).arqs[0];
      if (!arq?.attach_handle_uuid) throw new Error(`resolved as ${arq?.state} without an attach handle`);
      break;
    }
    if (r.status !== 423) throw new Error(`resolved query: ${r.status}`);
    await sleep(5); // Nova waits for its external event; a poller that spins would only measure itself
  }
  lap('resolved');
  const deleted = await call(pool, 'DELETE', `/v2/accelerator_requests?instance=${instance}`);
  if (deleted.status !== 204) throw new Error(`delete: ${deleted.status}`);
  lap('delete');
  return performance.now() - t;
}

/** One deployment (conductor process, agents, api) and `rounds` storms of `boots` boots against it. */
export async function runStorm(o: StormOptions): Promise<StormResult> {
  const log = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
  const name = `cyborg_bench_storm_${randomUUID().slice(0, 8)}`;
  await admin(`create database "${name}"`);
  const dbUrl = new URL(PG);
  dbUrl.pathname = `/${name}`;
  const orm = await openOrm({ url: dbUrl.toString(), pool: 1 });
  await migrate(orm).finally(() => orm.close());
  const prefix = `bs${randomUUID().slice(0, 6)}`;
  let conductor: ChildProcess | undefined;
  const bus = await connectBus({ url: NATS, name: `bench-storm-${prefix}`, log, prefix });
  const agents: Agent[] = [];
  const control = new RemoteControlPlane(bus, log, 30_000);
  let app: Awaited<ReturnType<typeof buildApi>> | undefined;
  try {
    conductor = spawn('./cli/bin.js', ['conductor', '--conductor-id', 'storm-c1'], {
      cwd: ROOT,
      env: {
        ...process.env,
        NATS_URL: NATS,
        CYBORG_SUBJECT_PREFIX: prefix,
        DATABASE_URL: dbUrl.toString(),
        LOG_LEVEL: 'error',
        LOG_PRETTY: 'false',
        CYBORG_METRICS_PORT: '-1',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
      detached: true,
    });
    const Stats = Type.Record(Type.String(), Type.Unknown());
    await until('the conductor', () =>
      bus.request(Subjects.service('conductor', 'storm-c1', 'STATS'), Type.Object({}), Stats, {}, { timeoutMs: 2_000 }).then(() => true),
    );
    const hosts = Array.from({ length: o.hosts }, (_, i) => `storm-${String(i + 1).padStart(2, '0')}`);
    const perHost = Math.ceil(o.boots / o.hosts);
    for (const host of hosts) {
      const agent = new Agent({
        host,
        bus,
        log,
        drivers: new DriverRegistry([new FakeDriver({ host, gpus: perHost, nics: 0 })]),
        heartbeatIntervalMs: 5_000,
        discoveryIntervalMs: 3_600_000,
        requestTimeoutMs: 30_000,
        telemetryIntervalMs: 0,
      });
      await startedWhenReady(`agent ${host} registered`, agent);
      agents.push(agent);
    }
    await startedWhenReady('the api to load the conductor', control);
    // The slots: every GPU of every host, enabled as an operator would, one boot each.
    const gpus = await until('every GPU registered', () => {
      const found = control.listAccelerators().filter((a) => a.deviceType === 'GPU');
      return found.length >= o.hosts * perHost ? found : undefined;
    });
    const limit = pLimit(20);
    await Promise.all(gpus.map((g) => limit(() => control.act(g.id, { type: 'ENABLE' }))));
    const slots = gpus.slice(0, o.boots).map((g) => ({ host: g.host, rpUuid: g.rpUuid }));
    app = await buildApi({ control, log });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const pool = new Pool(url, { connections: o.boots, pipelining: 1 });
    const dp = await call(pool, 'POST', '/v2/device_profiles', [{ name: 'storm-dp', groups: [{ 'resources:PGPU': '1' }] }]);
    if (dp.status !== 201) throw new Error(`device profile: ${dp.status}`);
    for (const s of slots.slice(0, o.hosts)) await boot(pool, s); // warm-up: JIT, connections, statements
    const lat: number[] = [];
    let failures = 0;
    let firstError: string | undefined;
    const steps: Record<Step, number[]> = { create: [], bind: [], resolved: [], delete: [] };
    const cpu0 = { conductor: cpuOf(conductor.pid!), api: cpuOf(process.pid) };
    const started = performance.now();
    for (let r = 0; r < o.rounds; r++) {
      await Promise.all(
        slots.map((s) =>
          boot(pool, s, steps).then(
            (ms) => {
              lat.push(ms);
            },
            (err: unknown) => {
              failures++;
              firstError ??= String(err);
            },
          ),
        ),
      );
    }
    const wallS = (performance.now() - started) / 1000;
    const cpuS = { conductor: cpuOf(conductor.pid!) - cpu0.conductor, api: cpuOf(process.pid) - cpu0.api };
    await pool.close();
    lat.sort((a, b) => a - b);
    const p50Of = (v: number[]): number =>
      pct(
        [...v].sort((a, b) => a - b),
        50,
      );
    const stepP50 = { create: p50Of(steps.create), bind: p50Of(steps.bind), resolved: p50Of(steps.resolved), delete: p50Of(steps.delete) };
    return {
      boots: lat.length + failures,
      failures,
      p50: pct(lat, 50),
      p99: pct(lat, 99),
      max: lat.at(-1) ?? NaN,
      wallS,
      steps: stepP50,
      cpuS,
      ...(firstError ? { firstError } : {}),
    };
  } finally {
    await app?.close();
    control.stop();
    await Promise.all(agents.map((a) => a.stop().catch(() => undefined)));
    if (conductor?.exitCode === null) {
      const gone = new Promise((r) => conductor!.once('exit', r));
      try {
        process.kill(-conductor.pid!, 'SIGKILL');
      } catch {
        conductor.kill('SIGKILL');
      }
      await gone;
    }
    await bus.close();
    await admin(`drop database if exists "${name}" with (force)`).catch(() => undefined);
  }
}

/** Runs the storm in a process of its own on the tree at `root`; its `STORM` line. */
function stormIn(root: string, o: StormOptions): Promise<StormResult> {
  const args = [
    '--import',
    'tsx',
    'bench/api/storm.ts',
    '--storm-boots',
    String(o.boots),
    '--storm-hosts',
    String(o.hosts),
    '--storm-rounds',
    String(o.rounds),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('STORM '));
      if (line) resolve(JSON.parse(line.slice(6)) as StormResult);
      else reject(new Error(`the storm in ${root} exited ${code}: ${out.slice(-2_000)}`));
    });
  });
}

/** A worktree of `ref` under /tmp (made once per commit), with this tree's dependencies and storm files. */
function worktreeOf(ref: string): { root: string; sha: string } {
  const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT, encoding: 'utf8' }).trim();
  const root = `/tmp/cyborg-bench-${sha}`;
  if (!existsSync(root)) execFileSync('git', ['worktree', 'add', '--detach', root, sha], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(join(root, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  for (const f of ['storm.ts', 'setup.ts']) copyFileSync(join(ROOT, 'bench', 'api', f), join(root, 'bench', 'api', f));
  // Commits from before drivers/ had a door: the storm's imports through it, pointed at their modules.
  const door = join(root, 'drivers', 'index.ts');
  if (!existsSync(door)) writeFileSync(door, "export { FakeDriver } from './fake/index.js';\nexport { DriverRegistry } from './registry.js';\n");
  return { root, sha };
}

const line = (what: string, r: StormResult): string =>
  `${what}: p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  max ${r.max.toFixed(0)} ms per boot, ${r.boots} boots in ${r.wallS.toFixed(1)} s, ${r.failures} failed${r.firstError ? ` (first: ${r.firstError})` : ''}` +
  (r.steps
    ? `\n    p50 per request (ms): ${Object.entries(r.steps)
        .map(([k, v]) => `${k} ${v.toFixed(0)}`)
        .join(', ')}`
    : '') +
  (r.cpuS
    ? `; CPU during the storms: conductor ${r.cpuS.conductor.toFixed(2)} s (${((r.cpuS.conductor / r.boots) * 1e3).toFixed(2)} ms per boot), api + agents + clients ${r.cpuS.api.toFixed(2)} s`
    : '');

const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const cpuPerBoot = (r: StormResult): number => (r.cpuS ? (r.cpuS.conductor / r.boots) * 1e3 : NaN);

/** The `storm` section of bench:api: this tree, and the baseline commit in the same run. */
export async function stormSection(o: StormOptions): Promise<void> {
  try {
    await admin('select 1');
  } catch (err) {
    console.log(`\nstorm: skipped — PostgreSQL unreachable at ${PG} (${String(err)})`);
    return;
  }
  console.log(
    `\nstorm: ${o.rounds} × ${o.boots} Nova boots at once (create, bind, poll, delete), ${o.hosts} fake hosts × ${Math.ceil(o.boots / o.hosts)} GPUs, one conductor process, NATS ${NATS}, PostgreSQL ${new URL(PG).host} (target p99 <= 1 s, 0 failures)`,
  );
  const base = o.baseline ? worktreeOf(o.baseline) : undefined;
  // The baseline first and this tree last, each in a fresh process and deployment; with pairs,
  // alternated so that a machine's drift weighs on both alike.
  const pairs: { theirs?: StormResult; ours: StormResult }[] = [];
  for (let i = 0; i < (base ? Math.max(1, o.pairs ?? 1) : 1); i++) {
    const theirs = base
      ? await stormIn(base.root, o).catch((err: unknown) => {
          console.log(`  baseline ${base.sha}: failed to run: ${String(err)}`);
          return undefined;
        })
      : undefined;
    const ours = await stormIn(ROOT, o);
    pairs.push({ ...(theirs ? { theirs } : {}), ours });
    if (theirs) console.log(`  ${line(`baseline ${base!.sha}`, theirs)}`);
    console.log(`  ${line('this tree', ours)}`);
    if (theirs)
      console.log(
        `  p50 ${(theirs.p50 / ours.p50).toFixed(2)}×, p99 ${(theirs.p99 / ours.p99).toFixed(2)}×, conductor CPU per boot ${(cpuPerBoot(theirs) / cpuPerBoot(ours)).toFixed(2)}× ${base!.sha}'s (above 1: better)`,
      );
  }
  const both = pairs.filter((p): p is { theirs: StormResult; ours: StormResult } => p.theirs !== undefined);
  if (both.length > 1) {
    const m = (f: (r: StormResult) => number): { ours: number; theirs: number } => ({
      ours: median(both.map((p) => f(p.ours))),
      theirs: median(both.map((p) => f(p.theirs))),
    });
    const [p50, p99, cpu] = [m((r) => r.p50), m((r) => r.p99), m(cpuPerBoot)];
    console.log(
      `  medians of ${both.length} pairs: p50 ${p50.ours.toFixed(0)} vs ${p50.theirs.toFixed(0)} ms (${(p50.theirs / p50.ours).toFixed(2)}×), p99 ${p99.ours.toFixed(0)} vs ${p99.theirs.toFixed(0)} ms (${(p99.theirs / p99.ours).toFixed(2)}×), conductor CPU per boot ${cpu.ours.toFixed(2)} vs ${cpu.theirs.toFixed(2)} ms (${(cpu.theirs / cpu.ours).toFixed(2)}×); ${both.reduce((n, p) => n + p.ours.failures, 0)} failed here`,
    );
  }
}

if (process.argv[1]?.endsWith(join('bench', 'api', 'storm.ts'))) {
  const args = process.argv.slice(2);
  const flag = (name: string, def: number): number => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : def;
  };
  const result = await runStorm({ boots: flag('storm-boots', 200), hosts: flag('storm-hosts', 20), rounds: flag('storm-rounds', 3) });
  console.log(`STORM ${JSON.stringify(result)}`);
  process.exit(0);
}
