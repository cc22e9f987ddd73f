/**
 * `npm run bench:placement [-- --deployables 1000,10000 --concurrency 1,4,16]`: the Placement sync
 * against a real OpenStack Placement shaped as production runs it (BENCH_PLACEMENT_PROCESSES uWSGI
 * processes, default 4, × BENCH_PLACEMENT_THREADS threads, default 4, on PostgreSQL: a database
 * `placement_bench_<port>` this bench creates, drops and re-creates before every measurement).
 *
 *   converge: for each N (deployables: hosts of 10 accelerators each, as bench:fleet makes them)
 *     and each concurrency, from an empty Placement, in the same run:
 *       - the ceiling (bench/placement/ceiling.ts): a plain client sending the least a converge
 *         needs for the same providers, inventories and traits at that concurrency;
 *       - ours: the conductor's PlacementSync on a cold start (its first full pass);
 *     and prints time, deployables/s, time to the first and the last host in sync, requests per
 *     deployable, 409 generation conflicts, 5xx answers (retried), lost or extra providers, and
 *     ours / ceiling.
 *   repair: 100 out-of-band changes repaired by one full pass, against a cold reconciler.
 *
 * BENCH_ONLY=converge,repair picks sections (both by default; repair runs on the first N).
 * PG_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where the database is made.
 */
import { loadavg as osLoad } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { stableId } from '../ids/index.js';
import { desiredOf } from '../openstack/placement/index.js';
import { freePort } from '../test/support/ports.js';
import { ceiling, type CeilingItem, type Tally } from './placement/ceiling.js';
import { PER_HOST, startFleet } from './placement/fleet.js';
import { ours } from './placement/ours.js';
import { ProductionPlacement } from './placement/production.js';
import { repair } from './placement/repair.js';
import { countMismatch } from './placement/verify.js';

const { values: args } = parseArgs({
  options: { deployables: { type: 'string', default: '1000' }, concurrency: { type: 'string', default: '1,4,16' } },
});
const sizes = args.deployables.split(',').map(Number);
const concurrencies = args.concurrency.split(',').map(Number);
const only = new Set((process.env.BENCH_ONLY ?? 'converge,repair').split(','));
const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });
const port = await freePort();
const placement = new ProductionPlacement({
  port,
  processes: Number(process.env.BENCH_PLACEMENT_PROCESSES ?? 4),
  threads: Number(process.env.BENCH_PLACEMENT_THREADS ?? 4),
  database: `placement_bench_${port}`,
  pgUrl: process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
});
const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

console.log(`Placement ${placement.url}: ${placement.shape}; load average ${loadavg()}`);
try {
  for (const [k, n] of sizes.entries()) {
    const fleet = await startFleet(Math.ceil(n / PER_HOST), `${Date.now().toString(36)}`, log);
    const views = fleet.conductor.listAccelerators();
    const items: CeilingItem[] = views.flatMap((v) => {
      const d = desiredOf(v);
      return d.ok ? [{ rootName: v.host, rootUuid: stableId('placement-root', v.host), provider: d.desired }] : [];
    });
    const expected = new Set([...items.map((i) => i.rootUuid), ...items.map((i) => i.provider.rpUuid)]);
    console.log(`\n${views.length} deployables on ${Math.ceil(n / PER_HOST)} hosts`);
    if (only.has('converge')) {
      for (const c of concurrencies) {
        await placement.fresh();
        const roots: number[] = [];
        const t0 = performance.now();
        const ct = await ceiling(placement.url, items, c, () => roots.push(performance.now() - t0));
        const cMs = performance.now() - t0;
        const cBad = await countMismatch(placement.url, expected);
        await placement.fresh();
        const o = await ours(placement.url, fleet.conductor, c, log);
        const oBad = await countMismatch(placement.url, expected);
        line('ceiling', c, views.length, cMs, roots, ct, cBad);
        line('ours   ', c, views.length, o.totalMs, o.hostDoneMs, o.tally, oBad);
        console.log(
          `  concurrency ${c}: ours / ceiling ${(views.length / o.totalMs / (views.length / cMs)).toFixed(2)}× throughput (load average ${loadavg()})`,
        );
      }
    }
    if (only.has('repair') && k === 0) {
      if (!only.has('converge')) {
        await placement.fresh();
        await ours(placement.url, fleet.conductor, concurrencies.at(-1)!, log);
      }
      await repair(placement.url, fleet.conductor, concurrencies.at(-1)!, log);
    }
    await fleet.stop();
  }
} finally {
  await placement.remove();
}

function line(who: string, c: number, n: number, ms: number, hostDone: number[], t: Tally, bad: { lost: number; extra: number }): void {
  console.log(
    `  ${who} c=${String(c).padStart(2)}: ${s(ms)}, ${(n / (ms / 1000)).toFixed(1)} deployables/s; first host ${s(hostDone[0] ?? NaN)}, last ${s(hostDone.at(-1) ?? NaN)}; ` +
      `${(t.requests / n).toFixed(2)} requests/deployable, ${t.conflicts} conflicts (409), ${t.serverErrors} 5xx; lost ${bad.lost}, extra ${bad.extra}`,
  );
}

function loadavg(): string {
  return osLoad()
    .map((x) => x.toFixed(1))
    .join(' ');
}
