/**
 * `npm run bench:api`: the Cyborg v2 API under Nova's load, over real HTTP on loopback.
 *
 *   1. ARQ lifecycle (create → bind → wait until resolved → delete by instance), cycles/s and
 *      p50/p99, sequentially and with 10 concurrent clients;
 *   2. `GET /v2/devices` with 1,000 devices, req/s at 10 connections (and at 1);
 *   3. keystone: (1) with 10 clients and (2) again through a second api in keystone mode, tokens
 *      validated by the real Keystone (KEYSTONE_URL, default http://127.0.0.1:15001/v3), against
 *      noauth in the same run (target ratio >= 0.8), and Keystone requests per 1,000 API requests
 *      (bench/api/keystone.ts); skipped with a line when Keystone is unreachable;
 *   4. sse: the api's RSS with --sse-clients event-stream clients connected (default 1,000;
 *      api.sseMaxClients raised to --sse-max-clients for it, default 1,200) (bench/api/sse.ts);
 *   5. fault: the lifecycle with --clients clients on a distributed deployment (NATS, PostgreSQL,
 *      two conductor processes) while a conductor is killed every --kill-every s (default 20) for
 *      --fault-seconds (default 60): acknowledged cycles/s, time to recover, lost (bench/api/fault.ts);
 *   6. storm: --storm-boots Nova boots at once (default 200; create, bind, poll, delete) on NATS,
 *      PostgreSQL and a conductor process, --storm-hosts fake hosts (default 20) giving one slot
 *      each, --storm-rounds times (default 3): p50/p99 per boot and failures, and with
 *      `--baseline <ref>` the same for that commit in the same run, `--storm-pairs N` times
 *      alternated with medians (bench/api/storm.ts).
 * BENCH_ONLY=base,keystone,sse,fault,storm (a comma list) runs only those sections.
 *
 * Against PostgreSQL (the db/ journal, a fresh database of its own) when it is reachable at
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432), else on the memory journal — the
 * output says which; the journal takes its CYBORG_DB_* settings from the environment
 * (CYBORG_DB_PIPELINE=1, CYBORG_DB_PREPARED_STATEMENTS=false, to compare). Prints the ratios to OpenStack Cyborg 9.0.0's figures (CYBORG below).
 *
 * Flags: --seconds N (per phase, default 8), --hosts N (default 100; 10 devices each),
 * --clients N (default 10), --memory (force the memory journal).
 */
import autocannon from 'autocannon';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Pool } from 'undici';
import type { Agent } from '../actors/agent/index.js';
import { MemoryJournal, type Journal } from '../actors/runtime/index.js';
import { buildApi } from '../api/server.js';
import { InProcessBus } from '../bus/index.js';
import { createLogger, loadConfig } from '../config/index.js';
import { NAMESPACE_DNS, uuid3 } from '../ids/index.js';
import { faultRun } from './api/fault.js';
import { benchAgent, benchConductor } from './api/in-process.js';
import { keystoneSection } from './api/keystone.js';
import { breakdown, call, cycle, lifecycle, NOAUTH, type LifecycleResult } from './api/lifecycle.js';
import { sseSection } from './api/sse.js';
import { stormSection } from './api/storm.js';

/** OpenStack Cyborg 9.0.0 (Zed), fake driver, MariaDB, real Placement, on the same kind of machine. */
const CYBORG = { seqCyclesPerS: 6.45, seqMsPerCycle: 142, concCyclesPerS: 0.07, devicesReqPerS10: 42.5, devicesP99Ms10: 369, devicesReqPerS1: 230 };
const TARGET = { seqRatio: 20, concCyclesPerS: 500, devicesRatio: 100 };

const args = process.argv.slice(2);
const flag = (name: string, def: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const SECONDS = flag('seconds', 8);
const HOSTS = flag('hosts', 100);
const CLIENTS = flag('clients', 10);

/** BENCH_ONLY=base,keystone,sse,fault,storm (a comma list) runs those sections; all of them by default. */
const SECTIONS = ['base', 'keystone', 'sse', 'fault', 'storm'] as const;
const ONLY = new Set(process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : SECTIONS);
for (const s of ONLY) if (!(SECTIONS as readonly string[]).includes(s)) throw new Error(`BENCH_ONLY takes ${SECTIONS.join(', ')}, not ${s}`);
const SSE_CLIENTS = flag('sse-clients', 1_000);
const SSE_MAX_CLIENTS = flag('sse-max-clients', 1_200);
const FAULT_SECONDS = flag('fault-seconds', 60);
const KILL_EVERY_S = flag('kill-every', 20);
const baselineAt = args.indexOf('--baseline');
const STORM = {
  boots: flag('storm-boots', 200),
  hosts: flag('storm-hosts', 20),
  rounds: flag('storm-rounds', 3),
  pairs: flag('storm-pairs', 1),
  ...(baselineAt >= 0 ? { baseline: args[baselineAt + 1]! } : {}),
};

// The program's own logger (asynchronous, to standard output): LOG_LEVEL=info measures the stack at
// the all-in-one's default level, as an operator runs it.
const log = createLogger({ logLevel: (process.env.LOG_LEVEL ?? 'silent') as 'info', logPretty: false });

async function openBenchJournal(): Promise<{ journal: Journal; what: string; cleanup: () => Promise<void> }> {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (args.includes('--memory') || !existsSync(new URL('../db/index.ts', import.meta.url))) {
    return { journal: new MemoryJournal(), what: 'MEMORY journal (no PostgreSQL: numbers exclude database round trips)', cleanup: async () => {} };
  }
  const pg = await import('pg');
  const name = `cyborg_bench_api_${randomUUID().slice(0, 8)}`;
  const admin = new pg.default.Client({ connectionString: base });
  try {
    await admin.connect();
  } catch {
    return { journal: new MemoryJournal(), what: `MEMORY journal (PostgreSQL unreachable at ${base})`, cleanup: async () => {} };
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const { migrate, openJournal, openOrm } = await import('../db/index.js');
  const orm = await openOrm({ url: url.toString(), pool: 1 });
  await migrate(orm).finally(() => orm.close());
  // The journal's knobs from the environment (CYBORG_DB_PIPELINE, CYBORG_DB_PREPARED_STATEMENTS, …), to compare them.
  const dbEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CYBORG_DB_')));
  const config = loadConfig({ databaseUrl: url.toString(), logLevel: 'silent' }, dbEnv);
  const journal = await openJournal(config, log);
  return {
    journal,
    what: `PostgreSQL ${url.host}/${name} (db/ PgJournal, pool ${config.persistence.pool})`,
    cleanup: async () => {
      const c = new pg.default.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function devices(
  url: string,
  connections: number,
  gzip: boolean,
  auth: Record<string, string> = NOAUTH,
  seconds = SECONDS,
): Promise<{ perS: number; p50: number; p99: number; errors: number; bytes: number; total: number }> {
  // The load generator runs on a worker thread, so that it does not share the server's event loop.
  // python-requests (Nova, the CLI) sends `Accept-Encoding: gzip, deflate`; gzip=false is a bare client.
  const headers: Record<string, string> = { ...auth, ...(gzip ? { 'accept-encoding': 'gzip, deflate' } : {}) };
  const r = await autocannon({ url: `${url}/v2/devices`, connections, duration: seconds, headers, workers: 1 });
  return {
    perS: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx,
    bytes: r.throughput.average,
    total: r.requests.total,
  };
}

const x = (ours: number, theirs: number): string => `${(ours / theirs).toFixed(1)}x`;

async function main(): Promise<void> {
  if (ONLY.has('fault')) {
    // Its own deployment (NATS, PostgreSQL, conductor processes), before the in-process stack.
    await faultRun({ seconds: FAULT_SECONDS, killEveryS: KILL_EVERY_S, clients: CLIENTS, log });
  }
  // Its own deployments (one for this tree, one for the baseline), before the in-process stack.
  if (ONLY.has('storm')) await stormSection(STORM);
  if (![...ONLY].some((s) => s === 'base' || s === 'keystone' || s === 'sse')) return;
  const { journal, what, cleanup } = await openBenchJournal();
  const bus = new InProcessBus(log);
  const conductor = await benchConductor(bus, journal, log);
  const hosts = Array.from({ length: HOSTS }, (_, i) => `bench-${String(i + 1).padStart(3, '0')}`);
  const agents: Agent[] = [];
  for (const host of hosts) agents.push(await benchAgent(host, bus, log));
  // The SSE section connects more event-stream clients than the default bound allows.
  const app = await buildApi({ control: conductor, log, limits: ONLY.has('sse') ? { sseMaxClients: SSE_MAX_CLIENTS } : {} });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const setup = new Pool(url, { connections: 4 });
  const lifecycleHosts = hosts.slice(0, Math.max(1, CLIENTS));
  for (const host of lifecycleHosts) {
    // Enable (install) the fake FPGA of each host the clients bind on, as an operator would.
    await conductor.act(conductor.getAcceleratorByRp(uuid3(NAMESPACE_DNS, `${host}_FakeDevice`))!.id, { type: 'ENABLE' });
  }
  const dp = await call(setup, 'POST', '/v2/device_profiles', [
    { name: 'bench-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] },
  ]);
  if (dp.status !== 201) throw new Error(`device profile: ${dp.status}`);
  const count = ((await call(setup, 'GET', '/v2/devices')).json as { devices: unknown[] }).devices.length;
  for (let i = 0; i < 20; i++) await cycle(setup, lifecycleHosts[0]!); // warm-up (JIT, connections)
  await setup.close();

  console.log(`cyborg bench:api — ${what}`);
  console.log(`${HOSTS} hosts, ${count} devices, ${SECONDS}s per phase, Node ${process.versions.node}\n`);
  breakdown();
  if (ONLY.has('base')) await base(url, lifecycleHosts, count);
  if (ONLY.has('keystone')) {
    await keystoneSection({
      control: conductor,
      log,
      noauthUrl: url,
      hosts: lifecycleHosts,
      clients: CLIENTS,
      seconds: SECONDS,
      devices: (u, h) => devices(u, 10, true, h),
    });
  }
  if (ONLY.has('sse')) await sseSection({ url, clients: SSE_CLIENTS, maxClients: SSE_MAX_CLIENTS, control: conductor, hosts: lifecycleHosts });

  await app.close();
  for (const a of agents) await a.stop();
  await conductor.stop();
  await bus.close();
  await journal.close();
  await cleanup();
}

const cpuSince = (from: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1e6;
};

/** The lifecycle with its clients in a child process (bench/api/lifecycle-clients.ts); the stack's CPU meanwhile beside theirs. */
async function lifecycleApart(
  url: string,
  clients: number,
  hosts: string[],
  seconds: number,
): Promise<LifecycleResult & { steps: string; cpuS: number; stackCpuS: number }> {
  const script = join(import.meta.dirname, 'api', 'lifecycle-clients.ts');
  // The stack idles while the child starts (tsx, its imports): what it spends is the clients' load.
  const cpu = process.cpuUsage();
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, url, String(clients), String(seconds), hosts.join(',')], {
    maxBuffer: 1 << 20,
  });
  const stackCpuS = cpuSince(cpu);
  return { ...(JSON.parse(stdout.trim().split('\n').at(-1)!) as LifecycleResult & { steps: string; cpuS: number }), stackCpuS };
}

/** The v2 API against Cyborg 9.0.0's figures: lifecycle sequential and with N clients, device list. */
async function base(url: string, lifecycleHosts: string[], count: number): Promise<void> {
  const seq = await lifecycle(url, 1, lifecycleHosts, SECONDS);
  console.log(
    `ARQ lifecycle, sequential:   ${seq.perS.toFixed(1)} cycles/s  p50 ${seq.p50.toFixed(1)} ms  p99 ${seq.p99.toFixed(1)} ms  (${seq.cycles} cycles, ${seq.failures} failed${seq.firstError ? `: ${seq.firstError}` : ''})`,
  );
  console.log(`  ${breakdown()}`);
  console.log(
    `  vs Cyborg 9.0.0 ${CYBORG.seqCyclesPerS} cycles/s (${CYBORG.seqMsPerCycle} ms): ${x(seq.perS, CYBORG.seqCyclesPerS)}  (target >= ${TARGET.seqRatio}x)`,
  );
  const cpu = process.cpuUsage();
  const conc = await lifecycle(url, CLIENTS, lifecycleHosts, SECONDS);
  const concCpu = cpuSince(cpu);
  console.log(
    `ARQ lifecycle, ${CLIENTS} clients:    ${conc.perS.toFixed(1)} cycles/s  p50 ${conc.p50.toFixed(1)} ms  p99 ${conc.p99.toFixed(1)} ms  (${conc.cycles} cycles, ${conc.failures} failed${conc.firstError ? `: ${conc.firstError}` : ''})`,
  );
  console.log(`  ${breakdown()}`);
  console.log(`  CPU: this process (stack and clients) ${concCpu.toFixed(1)} s, ${((concCpu / conc.cycles) * 1e3).toFixed(2)} ms per cycle`);
  // The same clients in a process of their own, as Nova's are: the stack's event loop is its own.
  const apart = await lifecycleApart(url, CLIENTS, lifecycleHosts, SECONDS);
  console.log(
    `ARQ lifecycle, ${CLIENTS} clients in their own process: ${apart.perS.toFixed(1)} cycles/s  p50 ${apart.p50.toFixed(1)} ms  p99 ${apart.p99.toFixed(1)} ms  (${apart.cycles} cycles, ${apart.failures} failed${apart.firstError ? `: ${apart.firstError}` : ''})`,
  );
  console.log(`  ${apart.steps}`);
  console.log(
    `  CPU: the stack's process ${apart.stackCpuS.toFixed(1)} s (${((apart.stackCpuS / apart.cycles) * 1e3).toFixed(2)} ms per cycle), the clients' ${apart.cpuS.toFixed(1)} s (${((apart.cpuS / apart.cycles) * 1e3).toFixed(2)} ms); ${x(apart.perS, conc.perS)} the in-process clients`,
  );
  console.log(
    `  vs Cyborg 9.0.0 ${CYBORG.concCyclesPerS} cycles/s: ${x(conc.perS, CYBORG.concCyclesPerS)}  (target >= ${TARGET.concCyclesPerS} cycles/s, no failures)`,
  );
  for (const [conns, gzip] of [
    [10, true],
    [10, false],
    [1, true],
  ] as const) {
    const d = await devices(url, conns, gzip);
    const theirs = conns === 10 ? CYBORG.devicesReqPerS10 : CYBORG.devicesReqPerS1;
    console.log(
      `GET /v2/devices (${count}), ${conns} conn${conns > 1 ? 's' : ''}, ${gzip ? 'gzip    ' : 'identity'}: ${d.perS.toFixed(1)} req/s  p50 ${d.p50} ms  p99 ${d.p99} ms  (${(d.bytes / 1e6).toFixed(1)} MB/s, ${d.errors} errors)`,
    );
    console.log(
      `  vs Cyborg 9.0.0 ${theirs} req/s${conns === 10 ? ` (p99 ${CYBORG.devicesP99Ms10} ms)` : ''}: ${x(d.perS, theirs)}${conns === 10 ? `  (target >= ${TARGET.devicesRatio}x)` : ''}`,
    );
  }
}

await main();
process.exit(0);
