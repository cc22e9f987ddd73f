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
 *   faults (bench/placement/faults.ts; opt-in, BENCH_ONLY=faults: its four variants take ~4–6 min
 *     at 200 deployables on the 2-core VM, mostly Placement's restarts and the slow variant's
 *     holds): our sync's cold start through a fault-injecting proxy (bench/placement/fault-proxy.ts),
 *     each variant from an empty Placement — `conflict` (every other write answered 409
 *     concurrent_update), `server-errors` (every 5th request answered 500), `slow` (every 20th
 *     held 10 s), `deleted` (providers deleted on Placement behind our back once half the hosts
 *     are in sync, a 5 s full-pass period to see them). Prints time to converge, requests per
 *     deployable at the proxy and at our client against a bound, faults injected, 409s and 5xx
 *     seen, whether Placement ends equal to the desired state (listing and each deployable's
 *     inventory and traits), and the bench process's RSS and JS heap (the conductor runs in
 *     it) before, peak and after; pass or FAIL per variant (memory judged by the live heap
 *     after the last full collection), exit status 1 on a FAIL. On 200 deployables at concurrency 4 unless --deployables /
 *     --concurrency are given (then the sizes, and the last concurrency); BENCH_FAULTS=conflict,…
 *     picks variants.
 *
 * BENCH_ONLY=converge,repair,faults picks sections (converge and repair by default; repair runs on the first N).
 * PG_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where the database is made.
 */
import { loadavg as osLoad } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { stableId } from '../ids/index.js';
import { desiredOf } from '../openstack/placement/index.js';
import { freePort } from '../test/support/ports.js';
import { ceiling, type CeilingItem, type Tally } from './placement/ceiling.js';
import { faults } from './placement/faults.js';
import { PER_HOST, startFleet } from './placement/fleet.js';
import { ours } from './placement/ours.js';
import { ProductionPlacement } from './placement/production.js';
import { repair } from './placement/repair.js';
import { countMismatch } from './placement/verify.js';

const { values: args } = parseArgs({ options: { deployables: { type: 'string' }, concurrency: { type: 'string' } } });
const only = new Set((process.env.BENCH_ONLY ?? 'converge,repair').split(','));
const sizes = (args.deployables ?? '1000').split(',').map(Number);
const concurrencies = (args.concurrency ?? '1,4,16').split(',').map(Number);
// The fault variants are about behaviour, not throughput: a small fleet unless told otherwise.
const faultSizes = args.deployables ? sizes : [200];
const faultConcurrency = args.concurrency ? concurrencies.at(-1)! : 4;
const runSizes = [...new Set([...(only.has('converge') || only.has('repair') ? sizes : []), ...(only.has('faults') ? faultSizes : [])])];
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
let faultsPassed = true;
try {
  for (const n of runSizes) {
    const fleet = await startFleet(Math.ceil(n / PER_HOST), `${Date.now().toString(36)}`, log);
    const views = fleet.conductor.listAccelerators();
    const items: CeilingItem[] = views.flatMap((v) => {
      const d = desiredOf(v);
      return d.ok ? [{ rootName: v.host, rootUuid: stableId('placement-root', v.host), provider: d.desired }] : [];
    });
    const expected = new Set([...items.map((i) => i.rootUuid), ...items.map((i) => i.provider.rpUuid)]);
    console.log(`\n${views.length} deployables on ${Math.ceil(n / PER_HOST)} hosts`);
    if (only.has('converge') && sizes.includes(n)) {
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
    if (only.has('repair') && n === sizes[0]) {
      if (!only.has('converge')) {
        await placement.fresh();
        await ours(placement.url, fleet.conductor, concurrencies.at(-1)!, log);
      }
      await repair(placement.url, fleet.conductor, concurrencies.at(-1)!, log);
    }
    if (only.has('faults') && faultSizes.includes(n)) {
      faultsPassed = (await faults({ placement, conductor: fleet.conductor, concurrency: faultConcurrency, log })) && faultsPassed;
    }
    await fleet.stop();
  }
} finally {
  await placement.remove();
}
if (!faultsPassed) process.exitCode = 1;

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
