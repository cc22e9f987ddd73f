/**
 * `npm run bench:persistence`: what the journal costs against real PostgreSQL, in one run.
 *   (a) raw batched `UPDATE … FROM unnest(...)`, 1,000 rows a statement: the physical limit here;
 *   (b) naive: one transaction per transition (UPDATE the row + INSERT the audit row) via `pg`;
 *   (c) ours: the conductor's actors (enable/disable through the fake agent over the bus) on
 *       the PgJournal, at 1,000 and 10,000 accelerators with concurrent callers: persisted
 *       transitions/s (each with its audit row), statements per transition, p50/p99 ack latency
 *       at full load, and p99 at half of the peak rate (open loop).
 * DATABASE_URL names the server (default postgres://postgres@127.0.0.1:5432/test); the bench
 * makes and drops its own database; BENCH_PIPELINE sets the journal's flush pipeline depth
 * (1: one flush at a time, to compare); BENCH_PREPARED=false leaves its statements unnamed (to
 * compare); BENCH_PHASE_MS each phase's length, BENCH_WARM_MS and BENCH_HALF_MS the half-peak
 * phase's warm-up and measured window (see `ours`); BENCH_ONLY=c1k or c10k runs that line of (c)
 * alone, without the baselines.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, constants as perf, PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';
import pino from 'pino';
import { Agent } from '../actors/agent/index.js';
import { Conductor } from '../actors/conductor/index.js';
import { MemoryJournal, type Journal } from '../actors/runtime/index.js';
import { InProcessBus } from '../bus/index.js';
import { migrate, openOrm, PgJournal } from '../db/index.js';
import { FakeDriver, DriverRegistry } from '../drivers/index.js';
import { AcceleratorStates } from '../machines/index.js';

const BASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 4_000);
/** The half-peak phase: a warm-up at that rate, then the window its latencies are taken from. */
const WARM_MS = Number(process.env.BENCH_WARM_MS ?? 1_000);
const HALF_MS = Number(process.env.BENCH_HALF_MS ?? 60_000);
/**
 * BENCH_TIMELINE names a file to append each half-peak request to ("<accelerators> <start ms>
 * <latency ms>") and each flush ("F <end ms> <duration ms> <changes>"), to line up with --trace-gc.
 */
const TIMELINE = process.env.BENCH_TIMELINE;
const timeline: string[] | undefined = TIMELINE ? [] : undefined;
const PIPELINE = process.env.BENCH_PIPELINE ? Number(process.env.BENCH_PIPELINE) : undefined;
/** BENCH_PREPARED=false: the hot path's statements unnamed (planned on every flush), to compare. */
const PREPARED = process.env.BENCH_PREPARED === 'false' ? { preparedStatements: false } : {};
const log = pino({ level: 'silent' });

function dbUrl(name: string): string {
  const u = new URL(BASE);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin(sql: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: BASE });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

/** The machine's CPU ticks so far, all and stolen (a virtual machine's neighbours): Linux only. */
function cpuTicks(): { total: number; steal: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return null;
  }
}

/**
 * Which tables PostgreSQL's autovacuum works on, sampled once a second (pg_stat_activity): a
 * vacuum of a table of millions of log rows shares the machine's cores with everything measured.
 */
class AutovacuumWatch {
  private readonly client = new pg.Client({ connectionString: BASE });
  private timer: NodeJS.Timeout | undefined;
  private readonly seconds = new Map<string, number>();

  async start(): Promise<void> {
    await this.client.connect();
    this.timer = setInterval(() => void this.sample(), 1_000);
  }

  private async sample(): Promise<void> {
    try {
      const { rows } = await this.client.query<{ query: string }>("select query from pg_stat_activity where backend_type = 'autovacuum worker'");
      for (const r of rows) {
        const what = r.query.replace(/^autovacuum:\s*/, '');
        this.seconds.set(what, (this.seconds.get(what) ?? 0) + 1);
      }
    } catch {
      // A sample lost is a second unaccounted, not a failed run.
    }
  }

  /** Stops and says what it saw: "VACUUM public.transition_log ~12 s, …" or "none". */
  async stop(): Promise<string> {
    clearInterval(this.timer);
    await this.client.end();
    return [...this.seconds].map(([what, secs]) => `${what} ~${secs} s`).join(', ') || 'none';
  }
}

/** Checkpoints PostgreSQL has started so far (each flushes dirty pages; commits slow meanwhile). */
async function checkpoints(): Promise<number> {
  const [row] = await admin('select checkpoints_timed + checkpoints_req as n from pg_stat_bgwriter');
  return Number(row?.n ?? 0);
}

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** (a) rows/s of one-statement batched updates. */
async function rawBatched(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const ids = Array.from({ length: 10_000 }, (_, i) => `raw-${i}`);
  await c.query(
    `insert into accelerators (id, host, state, context, created_at, updated_at)
    select id, 'raw', 'inactive', '{}'::jsonb, now(), now() from unnest($1::text[]) as id`,
    [ids],
  );
  let rows = 0;
  let n = 0;
  const until = Date.now() + PHASE_MS;
  const start = Date.now();
  while (Date.now() < until) {
    const batch = ids.slice((n % 10) * 1_000, (n % 10) * 1_000 + 1_000);
    const states = batch.map(() => (n % 2 ? 'ready' : 'installing'));
    const ctx = batch.map((id) => JSON.stringify({ id, n }));
    await c.query(
      `update accelerators a set state = x.state, context = x.context::jsonb, updated_at = now()
      from unnest($1::text[], $2::text[], $3::text[]) as x(id, state, context) where a.id = x.id`,
      [batch, states, ctx],
    );
    rows += batch.length;
    n++;
  }
  const rate = rows / ((Date.now() - start) / 1_000);
  await c.end();
  return rate;
}

/** (b) transitions/s with one transaction each (row update + audit row), concurrent callers. */
async function naive(url: string, callers = 64): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  let done = 0;
  const until = Date.now() + PHASE_MS;
  const start = Date.now();
  await Promise.all(
    Array.from({ length: callers }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const id = `raw-${(w * 150 + i) % 10_000}`;
        const c = await pool.connect();
        try {
          await c.query('begin');
          await c.query(`update accelerators set state = $2, context = $3::jsonb, updated_at = now() where id = $1`, [id, `s${i}`, JSON.stringify({ id, i })]);
          await c.query(`insert into transition_log (kind, id, host, event, "from", "to", at) values ('accelerator', $1, 'raw', 'STEP', 'a', 'b', now())`, [
            id,
          ]);
          await c.query('commit');
          done++;
        } finally {
          c.release();
        }
      }
    }),
  );
  const rate = done / ((Date.now() - start) / 1_000);
  await pool.end();
  return rate;
}

/** (j) the journal alone: concurrent callers committing (accelerator row + audit row) directly. */
async function journalAlone(url: string, callers = 1_000): Promise<{ rate: number; statementsPerTransition: number; p50: number; p99: number }> {
  const orm = await openOrm({ url, pool: 4 });
  const j = new PgJournal({ orm, log, unavailableAfterMs: 30_000, maxBatch: 5_000, ...(PIPELINE ? { pipeline: PIPELINE } : {}), ...PREPARED });
  const ids = Array.from({ length: 10_000 }, (_, i) => `j-${i}`);
  const lat: number[] = [];
  const until = Date.now() + PHASE_MS;
  const start = Date.now();
  await Promise.all(
    Array.from({ length: callers }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const id = ids[(w * 10 + i) % ids.length]!;
        // Back and forth between two real states: the log's ends are the machines' names.
        const [from, to] = i % 2 ? [AcceleratorStates.ready, AcceleratorStates.inactive] : [AcceleratorStates.inactive, AcceleratorStates.ready];
        const t = performance.now();
        await j.commit([
          {
            type: 'accelerator',
            id,
            host: 'j',
            record: { value: to, context: { id, host: 'j', capacity: 1, allocations: [], program: null, pending: null, error: null, resume: null } },
          },
          { type: 'transition', record: { kind: 'accelerator', id, host: 'j', event: 'STEP', from, to, at: new Date().toISOString(), actor: 'bench' } },
        ]);
        lat.push(performance.now() - t);
      }
    }),
  );
  const rate = j.stats.transitions / ((Date.now() - start) / 1_000);
  const statementsPerTransition = j.stats.statements / j.stats.transitions;
  await j.close();
  lat.sort((a, b) => a - b);
  return { rate, statementsPerTransition, p50: pct(lat, 50), p99: pct(lat, 99) };
}

interface Ours {
  rate: number;
  statementsPerTransition: number;
  p50: number;
  p99: number;
  halfRate: number;
  halfP50: number;
  halfP99: number;
  halfP999: number;
  halfMax: number;
  halfCount: number;
  halfMajorGcs: number[];
  halfMinorGcMax: number;
  halfLoopDelayMax: number;
  halfOver50: number;
  halfCheckpoints: number;
  halfStealPct: number | null;
  halfAutovacuum: string;
}

/** What the runtime's journal has done so far (the PgJournal's stats, or the memory journal's log). */
type Counted = Journal & { counts(): { transitions: number; statements: number } };

function pgJournal(url: string): Counted {
  const orm = openOrm({ url, pool: 4 });
  let j: PgJournal | undefined;
  const ready = orm.then((o) => {
    j = new PgJournal({ orm: o, log, unavailableAfterMs: 30_000, maxBatch: 5_000, ...(PIPELINE ? { pipeline: PIPELINE } : {}), ...PREPARED });
    if (timeline) j.onFlush = (changes, secs) => timeline.push(`F ${performance.now().toFixed(1)} ${(secs * 1_000).toFixed(1)} ${changes}`);
    return j;
  });
  return {
    commit: async (c) => (j ?? (await ready)).commit(c),
    load: async () => (j ?? (await ready)).load(),
    history: async (id, limit) => (j ?? (await ready)).history(id, limit),
    close: async () => (j ?? (await ready)).close(),
    counts: () => ({ transitions: j?.stats.transitions ?? 0, statements: j?.stats.statements ?? 0 }),
  };
}

function memoryJournal(): Counted {
  const m = new MemoryJournal();
  return Object.assign(m, { counts: () => ({ transitions: m.transitions.length, statements: 0 }) });
}

/** (c) the actor runtime on `journal`: `hosts` agents with `perHost` accelerators each. */
async function ours(journal: Counted, hosts: number, perHost: number, callers: number, window = { warmMs: WARM_MS, ms: HALF_MS }): Promise<Ours> {
  const bus = new InProcessBus(log);
  const timing = { driverOpTimeoutMs: 30_000, heartbeatIntervalMs: 60_000, staleAfterMs: 600_000, lostAfterMs: 1_200_000, discoveryIntervalMs: 3_600_000 };
  const conductor = new Conductor({ bus, journal, log, timing });
  await conductor.start();
  const agents: Agent[] = [];
  for (let h = 0; h < hosts; h++) {
    const host = `bench-${perHost}-${h}`;
    const fake = new FakeDriver({ host, gpus: 0, nics: perHost / 20, vfsPerNic: 20 });
    const agent = new Agent({
      host,
      bus,
      drivers: new DriverRegistry([fake]),
      log,
      heartbeatIntervalMs: 60_000,
      discoveryIntervalMs: 3_600_000,
      requestTimeoutMs: 120_000,
      telemetryIntervalMs: 0,
    });
    await agent.start();
    agents.push(agent);
  }
  const ids = conductor
    .listAccelerators()
    .filter((a) => a.deviceType === 'NIC')
    .map((a) => a.id);
  const toggle = async (id: string): Promise<number> => {
    const actor = conductor.tree.acceleratorActor(id);
    const t = performance.now();
    await actor.request(actor.state === AcceleratorStates.inactive ? { type: 'ENABLE' } : { type: 'DISABLE' });
    return performance.now() - t;
  };

  // Closed loop: each caller owns a slice of accelerators and toggles them as fast as acks come.
  const lat: number[] = [];
  const s0 = journal.counts();
  const until = Date.now() + PHASE_MS;
  const start = Date.now();
  await Promise.all(
    Array.from({ length: callers }, async (_, w) => {
      const mine = ids.filter((_id, i) => i % callers === w);
      for (let i = 0; Date.now() < until; i++) lat.push(await toggle(mine[i % mine.length]!));
    }),
  );
  const secs = (Date.now() - start) / 1_000;
  const transitions = journal.counts().transitions - s0.transitions;
  const rate = transitions / secs;
  const statementsPerTransition = (journal.counts().statements - s0.statements) / transitions;
  lat.sort((a, b) => a - b);

  // Open loop at half the peak: requests are started on a clock, whoever is free takes one. The
  // first WARM_MS are not counted: the peak just before left the heap full of what its requests
  // kept alive, and the p99 asked for is the one at half the peak, not at the peak's aftermath.
  // The window is long (HALF_MS, a minute) because major GCs come tens of seconds apart at this
  // rate, and each stalls acks: a short window reads "was there one in it", a long one counts
  // each at its real frequency.
  const halfTarget = rate / 2;
  const requestsPerSec = halfTarget / 2; // each request is two transitions (→ installing → ready)
  const half: number[] = [];
  const busy = new Set<string>();
  let h0 = journal.counts().transitions;
  const hStart = Date.now();
  let measureFrom = hStart + window.warmMs;
  let warm = window.warmMs > 0;
  let outstanding = 0;
  let drained: (() => void) | null = null;
  let issued = 0;
  // The major GCs inside the window, by their pauses: what most often makes a slow window.
  const majorGcs: number[] = [];
  // And what else can hold every ack up at once: the longest scavenge, the longest event-loop stall.
  let minorGcMax = 0;
  let checkpointsBefore = 0;
  const autovacuum = journal instanceof MemoryJournal ? null : new AutovacuumWatch();
  let ticksBefore: ReturnType<typeof cpuTicks> = null;
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (warm) continue;
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perf.NODE_PERFORMANCE_GC_MAJOR) majorGcs.push(e.duration);
      else if (kind === perf.NODE_PERFORMANCE_GC_MINOR) minorGcMax = Math.max(minorGcMax, e.duration);
    }
  });
  gcs.observe({ entryTypes: ['gc'] });
  while (Date.now() - hStart < window.warmMs + window.ms) {
    if (warm && Date.now() >= measureFrom) {
      loopDelay.enable();
      checkpointsBefore = await checkpoints();
      ticksBefore = cpuTicks();
      if (autovacuum) await autovacuum.start();
      warm = false;
      measureFrom = Date.now();
      h0 = journal.counts().transitions;
    }
    const due = Math.floor(((Date.now() - hStart) / 1_000) * requestsPerSec);
    for (; issued < due; issued++) {
      const id = ids[issued % ids.length]!;
      if (busy.has(id)) continue;
      busy.add(id);
      outstanding++;
      const counted = !warm;
      // Counted, not kept: an array of every request's promise would itself be promoted garbage.
      const t0 = performance.now();
      void toggle(id).then((ms) => {
        if (counted) half.push(ms);
        timeline?.push(`${hosts * perHost} ${t0.toFixed(1)} ${ms.toFixed(1)}`);
        busy.delete(id);
        if (--outstanding === 0) drained?.();
      });
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  if (outstanding > 0)
    await new Promise<void>((r) => {
      drained = r;
    });
  gcs.disconnect();
  loopDelay.disable();
  const halfCheckpoints = journal instanceof MemoryJournal ? 0 : (await checkpoints()) - checkpointsBefore;
  const ticksAfter = cpuTicks();
  const halfAutovacuum = autovacuum ? await autovacuum.stop() : 'none';
  const halfStealPct = ticksBefore && ticksAfter ? (100 * (ticksAfter.steal - ticksBefore.steal)) / Math.max(1, ticksAfter.total - ticksBefore.total) : null;
  if (timeline) appendFileSync(TIMELINE!, `${timeline.splice(0).join('\n')}\n`);
  const halfRate = (journal.counts().transitions - h0) / ((Date.now() - measureFrom) / 1_000);
  half.sort((a, b) => a - b);

  for (const a of agents) await a.stop();
  await conductor.stop();
  await bus.close();
  await journal.close();
  return {
    rate,
    statementsPerTransition,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    halfRate,
    halfP50: pct(half, 50),
    halfP99: pct(half, 99),
    halfP999: pct(half, 99.9),
    halfMax: half[half.length - 1] ?? NaN,
    halfCount: half.length,
    halfMajorGcs: majorGcs,
    halfMinorGcMax: minorGcMax,
    halfLoopDelayMax: loopDelay.max / 1e6,
    halfOver50: half.filter((ms) => ms > 50).length,
    halfCheckpoints,
    halfStealPct,
    halfAutovacuum,
  };
}

const LINES = [
  [1, 1_000, 250],
  [10, 1_000, 1_000],
] as const;
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && ONLY !== 'c1k' && ONLY !== 'c10k') throw new Error(`BENCH_ONLY is c1k or c10k, not ${ONLY}`);

/** (a), (b), (j) and (r), printed: the baselines (c) is measured against. */
async function baselines(url: string): Promise<{ a: number; b: number; mem: number }> {
  const a = await rawBatched(url);
  console.log(`(a) raw batched UPDATE … FROM unnest (1,000 rows/statement): ${fmt(a)} rows/s`);
  const b = await naive(url);
  console.log(`(b) naive, one transaction per transition (pg, pool 4, 64 callers): ${fmt(b)} transitions/s`);
  const jr = await journalAlone(url);
  console.log(
    `(j) the journal alone, 1,000 concurrent committers over 10,000 accelerators: ${fmt(jr.rate)} transitions/s, ${fmt(jr.statementsPerTransition, 3)} statements/transition, p50 ${fmt(jr.p50, 1)} ms, p99 ${fmt(jr.p99, 1)} ms`,
  );
  console.log(`    ratios: journal / naive = ${fmt(jr.rate / b, 2)}x, journal / raw = ${fmt((100 * jr.rate) / a, 1)}%`);
  // The runtime alone (memory journal): the ceiling any journal can reach on this machine.
  // Its half-peak window is short: the memory journal keeps every transition it is given.
  const mem = await ours(memoryJournal(), 1, 1_000, 250, { warmMs: 0, ms: PHASE_MS });
  console.log(
    `(r) reference, the actor runtime alone (memory journal), 1,000 accelerators, 250 callers: ${fmt(mem.rate)} transitions/s, p99 ${fmt(mem.p99, 1)} ms; at half its peak p50 ${fmt(mem.halfP50, 1)} ms, p99 ${fmt(mem.halfP99, 1)} ms`,
  );
  return { a, b, mem: mem.rate };
}

async function main(): Promise<void> {
  const name = `cyborg_bench_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${name}"`);
  const url = dbUrl(name);
  try {
    const orm = await openOrm({ url, pool: 1 });
    await migrate(orm);
    await orm.close();

    // BENCH_ONLY=c1k or c10k runs that line of (c) alone, without baselines (no ratios): for
    // studying its tail over many fresh processes, each a few seconds shorter.
    const only = ONLY ? LINES.filter(([hosts]) => (ONLY === 'c1k' ? hosts === 1 : hosts === 10)) : LINES;
    const base = ONLY ? null : await baselines(url);
    for (const [hosts, perHost, callers] of only) {
      const c = await ours(pgJournal(url), hosts, perHost, callers);
      console.log(`(c) ours, ${fmt(hosts * perHost)} accelerators, ${callers} concurrent callers:`);
      console.log(`    ${fmt(c.rate)} persisted transitions/s (each with its audit row), ${fmt(c.statementsPerTransition, 3)} statements/transition`);
      console.log(`    ack latency at peak: p50 ${fmt(c.p50, 1)} ms, p99 ${fmt(c.p99, 1)} ms`);
      console.log(
        `    at half the peak (${fmt(c.halfRate)} transitions/s, ${fmt(c.halfCount)} requests over ${fmt(HALF_MS / 1_000)} s after ${fmt(WARM_MS / 1_000)} s of warm-up): p50 ${fmt(c.halfP50, 1)} ms, p99 ${fmt(c.halfP99, 1)} ms  (target p99 <= 50 ms: ${c.halfP99 <= 50 ? 'met' : 'NOT met'}), p99.9 ${fmt(c.halfP999, 1)} ms, max ${fmt(c.halfMax, 1)} ms`,
      );
      console.log(
        `    in that window: ${fmt(c.halfOver50)} requests over 50 ms (${fmt((100 * c.halfOver50) / c.halfCount, 2)}%); major GCs: ${c.halfMajorGcs.length}${c.halfMajorGcs.length ? ` (atomic pauses ${c.halfMajorGcs.map((d) => fmt(d, 0)).join(', ')} ms; their incremental marking before each is not counted)` : ''}; longest scavenge ${fmt(c.halfMinorGcMax, 1)} ms; longest event-loop delay ${fmt(c.halfLoopDelayMax, 1)} ms; PostgreSQL checkpoints started: ${c.halfCheckpoints}${c.halfStealPct === null ? '' : `; CPU stolen by the hypervisor: ${fmt(c.halfStealPct, 1)}%`}; autovacuum: ${c.halfAutovacuum}`,
      );
      if (!base) continue;
      const { a, b, mem } = base;
      console.log(`    ours / runtime alone = ${fmt((100 * c.rate) / mem, 1)}%`);
      console.log(
        `    ratios: ours / naive = ${fmt(c.rate / b, 2)}x (target >= 5x: ${c.rate / b >= 5 ? 'met' : 'NOT met'}), ours / raw = ${fmt((100 * c.rate) / a, 1)}% (target >= 25%: ${c.rate / a >= 0.25 ? 'met' : 'NOT met'})`,
      );
    }
  } finally {
    await admin(`drop database if exists "${name}" with (force)`);
  }
}

await main();
