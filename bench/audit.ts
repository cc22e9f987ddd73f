/**
 * `npm run bench:audit`: the operator's audit query (`GET /cyborg/v1/audit`, db/audit.ts) on a
 * transition log of a fleet's size, against real PostgreSQL.
 *
 * Makes its own database (migrations applied, so the log has the indexes the query relies on),
 * fills `transition_log` with BENCH_ROWS rows (default 1,000,000) in one `generate_series`
 * insert — BENCH_HOSTS hosts (default 1,000), 10 accelerators each, spread over 30 days — then
 * runs the query as the route runs it: one host over a time range (BENCH_RANGE_H hours, default
 * 24), newest first, one page (BENCH_LIMIT rows, default 100), BENCH_QUERIES times (default 200)
 * on random hosts and windows. Prints p50/p99/max latency and the p99's ratio to the 100 ms
 * target; also the same over the whole fleet (no host) for comparison. DATABASE_URL names the
 * server (default postgres://postgres@127.0.0.1:5432/test); the database is dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { queryAudit, migrate, openOrm, type DB } from '../db/index.js';

const BASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const HOSTS = Number(process.env.BENCH_HOSTS ?? 1_000);
const RANGE_H = Number(process.env.BENCH_RANGE_H ?? 24);
const LIMIT = Number(process.env.BENCH_LIMIT ?? 100);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const DAYS = 30;
const TARGET_P99_MS = 100;

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: BASE });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const name = `cyborg_bench_audit_${randomUUID().slice(0, 8)}`;
const url = new URL(BASE);
url.pathname = `/${name}`;
await admin(`create database "${name}"`);
const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
try {
  const orm = await openOrm({ url: url.toString(), pool: 1 });
  await migrate(orm);
  await orm.close(true);

  // The log as a fleet writes it: rows of every host interleaved in time, seq rising with `at`.
  const end = Date.now();
  const start = end - DAYS * 86_400_000;
  const t0 = performance.now();
  await pool.query(
    `
    insert into transition_log (kind, id, host, event, "from", "to", actor, project_id, request_id, reason, at)
    select 'accelerator',
           'acc-' || (g % ($2::int * 10)),
           'host-' || lpad((g % $2::int)::text, 5, '0'),
           (array['ENABLE', 'DISABLE', 'PROGRAM', 'HEALTH_FAULT', 'HEARTBEAT_LOST'])[1 + g % 5],
           'ready', 'programming',
           case when g % 3 = 0 then 'conductor' else 'user-' || (g % 50) end,
           'project-' || (g % 20), 'req-' || g, null,
           to_timestamp($3::double precision / 1000) + (g::double precision / $1::int) * ($4::double precision) * interval '1 millisecond'
      from generate_series(1, $1::int) as g`,
    [ROWS, HOSTS, start, end - start],
  );
  await pool.query('analyze transition_log');
  const fillS = (performance.now() - t0) / 1000;
  const size = (await pool.query<{ s: string }>(`select pg_size_pretty(pg_total_relation_size('transition_log')) as s`)).rows[0]!.s;

  console.log(`cyborg bench:audit — PostgreSQL ${url.host}/${name}, Node ${process.versions.node}`);
  console.log(
    `transition_log: ${ROWS.toLocaleString('en')} rows, ${HOSTS} hosts × 10 accelerators over ${DAYS} days, ${size} with indexes (filled in ${fillS.toFixed(1)} s)\n`,
  );

  const run = async (byHost: boolean): Promise<{ p50: number; p99: number; max: number; rows: number }> => {
    const lat: number[] = [];
    let rows = 0;
    for (let i = 0; i < QUERIES + 10; i++) {
      const until = start + RANGE_H * 3_600_000 + Math.random() * (end - start - RANGE_H * 3_600_000);
      const q = {
        limit: LIMIT,
        since: new Date(until - RANGE_H * 3_600_000).toISOString(),
        until: new Date(until).toISOString(),
        ...(byHost ? { host: `host-${String(Math.floor(Math.random() * HOSTS)).padStart(5, '0')}` } : {}),
      };
      const t = performance.now();
      const page = await queryAudit(db, q);
      // The first few warm the plan cache and the pool; they are not counted.
      if (i >= 10) {
        lat.push(performance.now() - t);
        rows += page.entries.length;
      }
    }
    lat.sort((a, b) => a - b);
    return { p50: pct(lat, 50), p99: pct(lat, 99), max: lat.at(-1)!, rows: rows / QUERIES };
  };
  for (const byHost of [true, false]) {
    const r = await run(byHost);
    console.log(
      `audit query, ${byHost ? 'one host' : 'whole fleet'}, ${RANGE_H} h range, page ${LIMIT}: p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  max ${r.max.toFixed(1)} ms  (${QUERIES} queries, ${r.rows.toFixed(0)} rows a page)`,
    );
    console.log(`  vs target p99 <= ${TARGET_P99_MS} ms: ${(r.p99 / TARGET_P99_MS).toFixed(2)}x of target${byHost ? '' : '  (no target: for comparison)'}`);
  }
} finally {
  await db.destroy();
  await admin(`drop database if exists "${name}" with (force)`);
}
