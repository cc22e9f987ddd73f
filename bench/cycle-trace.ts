/**
 * One sequential ARQ lifecycle on PostgreSQL, message by message (issue 44): Nova's four calls
 * (create → bind → poll until resolved → delete by instance) against the in-process stack on a
 * fresh database, each step stamped on one clock — the HTTP request and its answer, every bus
 * message and request between conductor and agent, every journal commit (asked, acknowledged) and
 * every statement sent to PostgreSQL and its reply. Printed as a timeline per cycle after a
 * warm-up, then the median of each gap over `--cycles` cycles, so that what waits for what, and
 * what is neither a commit nor work, can be read off (docs/persistence.md, "One cycle, traced").
 *
 * The stamps come from wrapping, in this script only, the bench's HTTP client, the bus, the
 * journal's commit and pg's `Client.query`: the product carries no tracing hook.
 *
 * `--profile <file>` writes a CPU profile (Chrome DevTools' .cpuprofile) of the measured cycles
 * only — not the start, the migrations or the warm-up — for where the time between the stamps goes.
 *
 *   npx tsx bench/cycle-trace.ts [--cycles 200] [--show 2] [--memory] [--profile cycles.cpuprofile]
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createRequire } from 'node:module';
import pg from 'pg';
import { Pool } from 'undici';
import { MemoryJournal, type Journal } from '../actors/runtime/index.js';
import { buildApi } from '../api/server.js';
import { InProcessBus } from '../bus/index.js';
import { createLogger, loadConfig } from '../config/index.js';
import { NAMESPACE_DNS, uuid3 } from '../ids/index.js';
import { benchAgent, benchConductor } from './api/in-process.js';
import { call, cycle } from './api/lifecycle.js';
import { admin, PG } from './api/setup.js';

const args = process.argv.slice(2);
const flag = (name: string, dflt: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const CYCLES = flag('--cycles', 200);
const SHOW = flag('--show', 2);
const MEMORY = args.includes('--memory');
const PROFILE = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : undefined;
const log = createLogger({ logLevel: (process.env.LOG_LEVEL ?? 'silent') as 'info', logPretty: false });

/** One stamp: when (ms on performance.now()), which side, what. */
interface Stamp {
  at: number;
  what: string;
}
let stamps: Stamp[] = [];
/** The statements the cycle being traced sent, as sent: what `statementsAlone` replays. */
let captured: { text: string; name?: string; values: unknown[] }[] = [];
let tracing = false;
const stamp = (what: string): void => {
  if (tracing) stamps.push({ at: performance.now(), what });
};

/**
 * pg's Client.query, stamped at send and at reply: the ORM's Kysely and the journal's pool both go
 * through it — the copy of pg that @mikro-orm/postgresql brings, where it brings its own.
 */
function tracePg(): void {
  const fromOrm = createRequire(createRequire(import.meta.url).resolve('@mikro-orm/postgresql'))('pg') as typeof pg;
  for (const copy of new Set([pg, fromOrm])) traceClient(copy.Client);
}

function traceClient(Client: typeof pg.Client): void {
  const query = Client.prototype.query as (...a: unknown[]) => unknown;
  Client.prototype.query = function (this: pg.Client, ...a: unknown[]): unknown {
    const cfg = a[0] as string | { text?: string; name?: string };
    const text = typeof cfg === 'string' ? cfg : (cfg.text ?? cfg.name ?? '?');
    const short = text.replace(/\s+/g, ' ').trim().slice(0, 48);
    stamp(`pg → ${short}`);
    if (tracing && typeof cfg === 'object')
      captured.push({ text: cfg.text ?? '', ...(cfg.name ? { name: cfg.name } : {}), values: (cfg as { values?: unknown[] }).values ?? [] });
    // The pool asks with a callback (and gets no promise back); Kysely asks for a promise.
    const last = a.length - 1;
    if (typeof a[last] === 'function') {
      const cb = a[last] as (...r: unknown[]) => void;
      a[last] = (...r: unknown[]) => {
        stamp(`pg ${r[0] ? '✗' : '←'} ${short}`);
        cb(...r);
      };
    }
    const r = query.apply(this, a);
    if (r && typeof (r as Promise<unknown>).then === 'function')
      (r as Promise<unknown>).then(
        () => stamp(`pg ← ${short}`),
        () => stamp(`pg ✗ ${short}`),
      );
    return r;
  } as never;
}

/** The journal's commit: asked (with its changes' kinds) and acknowledged. */
function traceJournal(journal: Journal): Journal {
  const commit = journal.commit.bind(journal);
  journal.commit = (changes, opts) => {
    const kinds = changes.map((c) => c.type).join('+') || 'barrier';
    const tag = `${kinds}${opts?.defer ? ' (deferred)' : ''}`;
    stamp(`commit asked ${tag}`);
    const p = commit(changes, opts);
    p.then(
      () => stamp(`commit acked ${tag}`),
      () => stamp(`commit failed ${tag}`),
    );
    return p;
  };
  return journal;
}

/** The bus between conductor and agents: each publish and request (and its reply). */
function traceBus(bus: InProcessBus): InProcessBus {
  const publish = bus.publish.bind(bus);
  bus.publish = ((subject: string, schema: never, msg: never) => {
    stamp(`bus publish ${subject}`);
    publish(subject, schema, msg);
  }) as typeof bus.publish;
  const request = bus.request.bind(bus);
  bus.request = ((subject: string, a: never, b: never, msg: never, opts: never) => {
    stamp(`bus request ${subject}`);
    const p = request(subject, a, b, msg, opts);
    p.then(() => stamp(`bus reply ${subject}`)).catch(() => undefined);
    return p;
  }) as typeof bus.request;
  return bus;
}

/** The bench's HTTP calls: sent and answered. */
function traceHttp(pool: Pool): Pool {
  const request = pool.request.bind(pool);
  pool.request = ((o: { method: string; path: string }) => {
    const what = `${o.method} ${o.path.replace(/[0-9a-f-]{36}/g, '…').slice(0, 60)}`;
    stamp(`http → ${what}`);
    return (request(o as never) as Promise<{ statusCode: number }>).then((r) => {
      stamp(`http ← ${r.statusCode} ${what}`);
      return r;
    });
  }) as typeof pool.request;
  return pool;
}

async function openJournal(): Promise<{ journal: Journal; url: string; drop: () => Promise<void> }> {
  if (MEMORY) return { journal: new MemoryJournal(), url: '', drop: async () => {} };
  const name = `cyborg_bench_trace_${randomUUID().slice(0, 8)}`;
  await admin(`CREATE DATABASE ${name}`);
  if (process.env.TRACE_PG_LOG) await admin(`ALTER DATABASE ${name} SET log_min_duration_statement = 0`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const db = await import('../db/index.js');
  const orm = await db.openOrm({ url: url.toString(), pool: 1 });
  await db.migrate(orm).finally(() => orm.close());
  const journal = await db.openJournal(loadConfig({ databaseUrl: url.toString(), logLevel: 'silent' }, {}), log);
  return { journal, url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * The floor under a cycle on PostgreSQL: the last cycle's statements, exactly as the journal sent
 * them (text, name, parameters), sent again from one lone connection with nothing else in the
 * process — each cycle with a new ARQ uuid and new flush stamps — and timed: the round trips,
 * PostgreSQL's execution and its commit, and no work of ours. A cycle on PostgreSQL cannot be
 * faster than the memory journal's cycle plus this, so its ratio to the memory journal is at most
 * memory / (memory + this) on the same machine.
 */
async function statementsAlone(url: string, sent: typeof captured, cycles = 500): Promise<void> {
  const arq = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(JSON.stringify(sent[0]?.values ?? []))?.[0];
  if (!arq || sent.length === 0) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let seq = 0;
  const each: number[][] = sent.map(() => []);
  for (let i = 0; i < cycles + 50; i++) {
    const fresh = randomUUID();
    for (const [k, q] of sent.entries()) {
      const values = (JSON.parse(JSON.stringify(q.values).replaceAll(arq, fresh)) as unknown[]).map((v) =>
        typeof v === 'string' && /^[0-9a-f-]{36}:\d+$/.test(v) ? `alone:${seq++}` : v,
      );
      const t = performance.now();
      await client.query({ ...q, values });
      if (i >= 50) each[k]!.push(performance.now() - t);
    }
  }
  await client.end();
  const per = each.map(median);
  const sum = per.reduce((a, b) => a + b, 0);
  console.log(
    `\nthe cycle's ${sent.length} statements alone, from one lone connection (median of ${cycles}): ${per.map((x) => x.toFixed(2)).join(' + ')} = ${sum.toFixed(2)} ms a cycle` +
      `\n  a cycle on PostgreSQL is at least the memory journal's cycle plus this: its ratio to the memory journal at most M / (M + ${sum.toFixed(2)}) for a memory cycle of M ms`,
  );
}

function timeline(cycleStamps: Stamp[]): string {
  const t0 = cycleStamps[0]?.at ?? 0;
  let prev = t0;
  return cycleStamps
    .map((s) => {
      const line = `  ${(s.at - t0).toFixed(2).padStart(7)} ms  (+${(s.at - prev).toFixed(2).padStart(5)})  ${s.what}`;
      prev = s.at;
      return line;
    })
    .join('\n');
}

/** The gap before each stamp, keyed by the stamp's position and name, median over cycles of the same shape. */
const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function medians(all: Stamp[][]): string {
  const shape = (c: Stamp[]): string => c.map((s) => s.what.replace(/GET .*/, 'GET')).join('|');
  const byShape = new Map<string, Stamp[][]>();
  for (const c of all) byShape.set(shape(c), [...(byShape.get(shape(c)) ?? []), c]);
  const [, cycles] = [...byShape.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  const rows = cycles[0]!.map((s, i) => {
    const gap = median(cycles.map((c) => c[i]!.at - (i === 0 ? c[0]!.at : c[i - 1]!.at)));
    return `  (+${gap.toFixed(2).padStart(5)})  ${s.what}`;
  });
  const total = median(cycles.map((c) => c[c.length - 1]!.at - c[0]!.at));
  return `the most common shape: ${cycles.length} of ${all.length} cycles, median ${total.toFixed(2)} ms a cycle\n${rows.join('\n')}`;
}

async function main(): Promise<void> {
  if (!MEMORY) tracePg();
  const { journal, url: journalUrl, drop } = await openJournal();
  traceJournal(journal);
  const bus = traceBus(new InProcessBus(log));
  const conductor = await benchConductor(bus, journal, log);
  const host = 'trace-001';
  const agent = await benchAgent(host, bus, log);
  const app = await buildApi({ control: conductor, log });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const pool = traceHttp(new Pool(url, { connections: 1 }));
  await conductor.act(conductor.getAcceleratorByRp(uuid3(NAMESPACE_DNS, `${host}_FakeDevice`))!.id, { type: 'ENABLE' });
  const dp = await call(pool, 'POST', '/v2/device_profiles', [
    { name: 'bench-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] },
  ]);
  if (dp.status !== 201) throw new Error(`device profile: ${dp.status}`);
  for (let i = 0; i < 50; i++) await cycle(pool, host); // warm-up (JIT, connections)

  console.log(`cyborg bench:cycle-trace — ${MEMORY ? 'memory journal' : 'PostgreSQL'}, one host, ${CYCLES} sequential cycles, Node ${process.versions.node}\n`);
  const all: Stamp[][] = [];
  const profiler = PROFILE ? new Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  for (let i = 0; i < CYCLES; i++) {
    stamps = [];
    captured = [];
    tracing = true;
    await cycle(pool, host);
    // The commits a cycle asked for that are acknowledged after its last answer belong to it too.
    await new Promise((r) => setTimeout(r, 5));
    tracing = false;
    all.push(stamps);
  }
  if (profiler && PROFILE) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(PROFILE, JSON.stringify(profile));
    profiler.disconnect();
    console.log(`CPU profile of the ${CYCLES} cycles: ${PROFILE}`);
  }
  for (const c of all.slice(0, SHOW)) console.log(`${timeline(c)}\n`);
  console.log(medians(all));

  await pool.close();
  await app.close();
  await agent.stop();
  await conductor.stop();
  await bus.close();
  await journal.close();
  if (!MEMORY) await statementsAlone(journalUrl, captured);
  await drop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
