/**
 * `npm run bench:fleet [-- --hosts 1000,10000 --steady-s 15 --no-db]`
 *
 * One conductor process (as an operator runs it: `cyborg conductor`, leases on, PostgreSQL when
 * reachable) against a simulator — this process — running N fake agents (10 accelerators each)
 * over real NATS. Measures, per N, in the same run:
 *   - cold start: from the first agent starting until every inventory is registered (acknowledged);
 *   - heartbeat lag p99 at 1 Hz per host (sent → processed by the conductor, its STATS window);
 *   - conductor CPU (steady state) and RSS, and RSS per accelerator;
 * and prints each figure with its ratio to its target (docs/benchmarks.md records the latest).
 * For digging: CONDUCTOR_NODE_OPTIONS adds Node flags to the conductor, BENCH_PROF=1 writes its CPU
 * profile to /tmp/prof, BENCH_HOLD_S=n keeps it running n seconds after the figures (its pid is
 * printed: read /proc/<pid>/smaps). The conductor's log (warnings up) goes to BENCH_CONDUCTOR_LOG
 * (default /tmp/bench-fleet-conductor.log).
 *
 * `--mix`: the simulated hosts run the real vendor drivers on the fixtures, a kind per host in
 * turn (bench/fleet/mix.ts), instead of 1 fake FPGA + 9 fake GPUs each.
 * `--flapping 0.01`: that share of the accelerators flaps (bad, good, bad, … at every check) while
 * every agent polls health at 1 Hz and the conductor auto-enables the fleet; prints the Placement
 * writes it causes (bench/fleet/flapping.ts), with the conductor's CPU and heartbeat lag.
 * BENCH_ONLY=fleet,discovery (a comma list; both by default) picks the sections: `fleet` is the
 * above; `discovery` times one discovery pass per host for each driver kind on the vendor
 * fixtures (bench/fleet/discovery.ts; --passes N, default 50).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pLimit from 'p-limit';
import { Kvm } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import pg from 'pg';
import { pino } from 'pino';
import { Agent } from '../actors/agent/index.js';
import { migrate, openOrm } from '../db/index.js';
import { connectBus, type NatsBus } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { FakeDriver, DriverRegistry, type Driver } from '../drivers/index.js';
import { discoverySection } from './fleet/discovery.js';
import { FlappingFleet } from './fleet/flapping.js';
import { discoveredFirst, MIX_KINDS, mixedDrivers } from './fleet/mix.js';

const { values: args } = parseArgs({
  options: {
    hosts: { type: 'string', default: '1000,10000' },
    'steady-s': { type: 'string', default: '15' },
    'no-db': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '200' },
    passes: { type: 'string', default: '50' },
    mix: { type: 'boolean', default: false },
    flapping: { type: 'string', default: '0' },
  },
});
const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const PG = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ACCELERATORS_PER_HOST = 10;
const TARGET = { coldStart10kS: 30, lagP99Ms: 1000, rssPerAcceleratorB: 1024 ** 3 / 100_000 };
const log = pino({ level: 'warn' });
const CONDUCTOR_LOG = process.env.BENCH_CONDUCTOR_LOG ?? '/tmp/bench-fleet-conductor.log';
const Stats = Type.Record(Type.String(), Type.Unknown());

interface ConductorStats {
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  pid: number;
  externalBytes: number;
  cpu: { user: number; system: number };
  accelerators: number;
  heartbeats: number;
  heartbeatLagMs: { p50: number | null; p99: number | null; max: number | null };
}

async function pgReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG, connectionTimeoutMillis: 2_000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function freshDb(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `cyborg_bench_fleet_${randomUUID().slice(0, 8)}`;
  const admin = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(sql);
    await c.end();
  };
  await admin(`create database "${name}"`);
  const u = new URL(PG);
  u.pathname = `/${name}`;
  // The conductors refuse a database `cyborg db migrate` has not migrated.
  const orm = await openOrm({ url: u.toString(), pool: 1 });
  await migrate(orm).finally(() => orm.close());
  return { url: u.toString(), drop: () => admin(`drop database if exists "${name}" with (force)`) };
}

function startConductor(prefix: string, databaseUrl: string | undefined, extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
  // As an operator runs it: the `cyborg` bin (and the V8 flags its first line gives). BENCH_PROF=1
  // writes a CPU profile of the conductor to /tmp/prof instead.
  const [cmd, ...argv] = process.env.BENCH_PROF
    ? [process.execPath, '--max-semi-space-size=16', '--cpu-prof', '--cpu-prof-dir=/tmp/prof', 'cli/bin.js']
    : ['./cli/bin.js'];
  const child = spawn(cmd!, [...argv, 'conductor', '--conductor-id', `bench-${prefix}`], {
    cwd: join(import.meta.dirname, '..'),
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${process.env.CONDUCTOR_NODE_OPTIONS ?? ''} --expose-gc`.trim(),
      NATS_URL: NATS,
      CYBORG_SUBJECT_PREFIX: prefix,
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
      CYBORG_METRICS_PORT: '-1',
      CYBORG_HEARTBEAT_INTERVAL_MS: '1000',
      CYBORG_STALE_AFTER_MS: '15000',
      CYBORG_LOST_AFTER_MS: '60000',
      CYBORG_REQUEST_TIMEOUT_MS: '120000',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATABASE_URL: '' }),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  // Its warnings and errors (pino, JSON lines) are kept for reading after the run.
  child.stdout!.pipe(createWriteStream(CONDUCTOR_LOG));
  return Promise.resolve(child);
}

async function stats(bus: NatsBus, id: string, req: { gc?: boolean; resetWindow?: boolean } = {}): Promise<ConductorStats> {
  const Req = Type.Object({ gc: Type.Optional(Type.Boolean()), resetWindow: Type.Optional(Type.Boolean()) });
  return (await bus.request(Subjects.service('conductor', id, 'STATS'), Req, Stats, req, { timeoutMs: 30_000 })) as unknown as ConductorStats;
}

async function waitForConductor(bus: NatsBus, id: string): Promise<ConductorStats> {
  for (const deadline = Date.now() + 180_000; Date.now() < deadline; ) {
    try {
      return await stats(bus, id);
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error('the conductor did not come up');
}

async function runFleet(hosts: number, useDb: boolean, steadyS: number, concurrency: number): Promise<void> {
  const prefix = `bench${randomUUID().slice(0, 6)}`;
  const id = `bench-${prefix}`;
  const db = useDb ? await freshDb() : undefined;
  const share = Number(args.flapping);
  if (!(share >= 0 && share <= 1)) throw new Error(`--flapping takes a share of the accelerators between 0 and 1, not ${args.flapping}`);
  if (share > 0 && args.mix) throw new Error("--flapping runs on the fake driver's fleet, not with --mix");
  // A flapping device only costs Placement writes if it was in service: the fleet is enabled.
  const child = await startConductor(prefix, db?.url, share > 0 ? { CYBORG_AUTO_ENABLE: 'true' } : {});
  const bus = await connectBus({ url: NATS, name: `bench-fleet-${prefix}`, log, prefix });
  const agents: Agent[] = [];
  const flapping = share > 0 ? new FlappingFleet(bus, share) : undefined;
  try {
    await waitForConductor(bus, id);
    const idle = await stats(bus, id, { gc: true });
    const mix = args.mix ? mixedDrivers() : undefined;
    const hostName = (i: number): string => `sim-${String(i).padStart(5, '0')}`;
    // With --mix, each host's real drivers discover once before the clock (see discoveredFirst).
    const prepared: Driver[][] = [];
    if (mix) {
      let k = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (k < hosts) {
            const i = k++;
            prepared[i] = await discoveredFirst(mix.driversFor(hostName(i), i));
          }
        }),
      );
    }
    for (let i = 0; i < hosts; i++) {
      const host = hostName(i);
      const fake = prepared[i] ? undefined : new FakeDriver({ host, gpus: ACCELERATORS_PER_HOST - 1, nics: 0 });
      if (fake) flapping?.add(fake);
      agents.push(
        new Agent({
          host,
          bus,
          log,
          drivers: new DriverRegistry(prepared[i] ?? [fake!]),
          heartbeatIntervalMs: 1_000,
          discoveryIntervalMs: 3_600_000,
          requestTimeoutMs: 120_000,
          telemetryIntervalMs: 0,
          ...(flapping ? { healthIntervalMs: 1_000 } : {}),
        }),
      );
    }
    // Cold start: every agent registers and reports; done when each inventory is acknowledged.
    const t0 = performance.now();
    let retries = 0;
    const limit = pLimit(concurrency);
    await Promise.all(
      agents.slice(0, hosts).map((agent) =>
        limit(async () => {
          // As the agent role does: a registration the conductor could not take now is retried.
          for (;;) {
            try {
              await agent.start();
              break;
            } catch {
              retries++;
              await agent.stop();
              await new Promise((r) => setTimeout(r, 500));
            }
          }
        }),
      ),
    );
    const coldS = (performance.now() - t0) / 1000;
    const registered = await stats(bus, id);
    // The faults start once the whole fleet is in service; the steady window then measures them.
    if (flapping) await flapping.begin(registered.accelerators);
    // Steady state: every host heartbeats at 1 Hz; measure the conductor over the window.
    const before = await stats(bus, id, { resetWindow: true });
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, steadyS * 1000));
    const after = await stats(bus, id);
    const writes = flapping?.end();
    const settled = await stats(bus, id, { gc: true });
    const wallUs = (performance.now() - w0) * 1000;
    const cpuPct = ((after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / wallUs) * 100;
    // After a full GC: what the actor tree holds, not garbage the collector has yet to take.
    const rssPerAcc = (settled.rssBytes - idle.rssBytes) / Math.max(1, settled.accelerators);
    const heapPerAcc = (settled.heapUsedBytes - idle.heapUsedBytes) / Math.max(1, settled.accelerators);
    const p99 = after.heartbeatLagMs.p99 ?? Number.NaN;
    const beatsPerS = (after.heartbeats - before.heartbeats) / steadyS;
    const ratio = (v: number, t: number): string => `${(v / t).toFixed(2)}x of target`;
    console.log(
      args.mix
        ? `\n== ${hosts} hosts, a mix of driver kinds on the vendor fixtures (${MIX_KINDS.join(', ')}; ${useDb ? 'PostgreSQL' : 'memory'} journal, leases on) ==`
        : `\n== ${hosts} hosts × ${ACCELERATORS_PER_HOST} accelerators (${useDb ? 'PostgreSQL' : 'memory'} journal, leases on) ==`,
    );
    console.log(
      `  registered accelerators  ${registered.accelerators}${args.mix ? '' : ` / ${hosts * ACCELERATORS_PER_HOST}`} when the last reply came, ${settled.accelerators} after the steady window (${retries} registrations retried)`,
    );
    console.log(
      `  cold start               ${coldS.toFixed(1)} s  (${(hosts / coldS).toFixed(0)} hosts/s; 10k-host target ${TARGET.coldStart10kS} s → ${hosts === 10_000 ? ratio(coldS, TARGET.coldStart10kS) : `projected ${(10_000 / (hosts / coldS)).toFixed(1)} s = ${ratio(10_000 / (hosts / coldS), TARGET.coldStart10kS)}`})`,
    );
    if (writes) flapping!.print(writes, steadyS);
    console.log(
      `  heartbeat lag p50/p99/max ${after.heartbeatLagMs.p50} / ${p99} / ${after.heartbeatLagMs.max} ms over the steady window  (target p99 ≤ ${TARGET.lagP99Ms} ms → ${ratio(p99, TARGET.lagP99Ms)})`,
    );
    console.log(`  heartbeats processed     ${beatsPerS.toFixed(0)}/s (expected ${hosts}/s)`);
    console.log(`  conductor CPU (steady)   ${cpuPct.toFixed(0)} % of one core`);
    console.log(
      `  conductor RSS            ${(after.rssBytes / 2 ** 20).toFixed(0)} MiB steady, ${(settled.rssBytes / 2 ** 20).toFixed(0)} MiB after GC (idle ${(idle.rssBytes / 2 ** 20).toFixed(0)} MiB); heap ${(heapPerAcc / 1024).toFixed(1)} KiB per accelerator`,
    );
    const status = await readFile(`/proc/${settled.pid}/status`, 'utf8').catch(() => '');
    const kib = (k: string): string => `${(Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024).toFixed(0)} MiB`;
    if (status) console.log(`  conductor RSS by kind    anonymous ${kib('RssAnon')}, file-backed ${kib('RssFile')}`);
    if (process.env.BENCH_HOLD_S) {
      console.log(`pid ${settled.pid}`);
      await new Promise((r) => setTimeout(r, Number(process.env.BENCH_HOLD_S) * 1000));
    }
    console.log(
      `  conductor heap           ${(settled.heapUsedBytes / 2 ** 20).toFixed(0)} MiB used of ${(settled.heapTotalBytes / 2 ** 20).toFixed(0)} MiB, ${(settled.externalBytes / 2 ** 20).toFixed(0)} MiB external`,
    );
    console.log(
      `  RSS per accelerator      ${(rssPerAcc / 1024).toFixed(1)} KiB  (target ≤ ${(TARGET.rssPerAcceleratorB / 1024).toFixed(1)} KiB → ${ratio(rssPerAcc, TARGET.rssPerAcceleratorB)}; 100k accelerators ≈ ${((idle.rssBytes + rssPerAcc * 100_000) / 2 ** 30).toFixed(2)} GiB)`,
    );
  } finally {
    flapping?.stop();
    await Promise.all(agents.map((a) => a.stop().catch(() => undefined)));
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    // The run's lease bucket (10,000 keys) would otherwise stay in JetStream for every later run.
    await new Kvm(bus.nc)
      .open(`${prefix}_cyborg_leases`)
      .then((kv) => kv.destroy())
      .catch(() => undefined);
    await bus.close();
    await db?.drop().catch(() => undefined);
  }
}

const SECTIONS = ['fleet', 'discovery'];
const ONLY = new Set(process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : SECTIONS);
for (const s of ONLY) if (!SECTIONS.includes(s)) throw new Error(`BENCH_ONLY takes ${SECTIONS.join(', ')}, not ${s}`);
if (ONLY.has('fleet')) {
  const useDb = !args['no-db'] && (await pgReachable());
  console.log(`bench:fleet — NATS ${NATS}, journal: ${useDb ? 'PostgreSQL (fresh database per run)' : 'memory'}`);
  for (const n of args.hosts.split(',').map(Number)) await runFleet(n, useDb, Number(args['steady-s']), Number(args.concurrency));
}
if (ONLY.has('discovery')) await discoverySection(Number(args.passes));
process.exit(0);
