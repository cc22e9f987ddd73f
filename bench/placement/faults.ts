import type { Logger } from 'pino';
import type { Conductor } from '../../actors/conductor/index.js';
import { stableId } from '../../ids/index.js';
import { desiredOf, passCounter, PlacementClient, type DesiredProvider } from '../../openstack/placement/index.js';
import { FaultProxy, type FaultPolicy } from './fault-proxy.js';
import { ours, type OursOptions } from './ours.js';
import type { ProductionPlacement } from './production.js';
import { sampleRss } from './rss.js';
import { countDiffering, countMismatch } from './verify.js';

/** Placement's own body for a stale generation (placement/errors.py CONCURRENT_UPDATE), as 1.23+ sends it. */
const CONFLICT = {
  errors: [
    {
      status: 409,
      code: 'placement.concurrent_update',
      title: 'Conflict',
      detail: 'There was a conflict when trying to complete your request.\n\n resource provider generation conflict  ',
      request_id: 'req-fault-proxy',
    },
  ],
};
const SERVER_ERROR = {
  errors: [
    {
      status: 500,
      code: 'placement.undefined_code',
      title: 'Internal Server Error',
      detail: 'The server has either erred or is incapable of performing the requested operation.\n\n  ',
      request_id: 'req-fault-proxy',
    },
  ],
};

/** The cold-start bound with no fault (test/placement/cold-start.test.ts asserts ≤ 3.5 requests per deployable). */
const BASE_PER_DEPLOYABLE = 3.5;
/**
 * Requests per host that each full pass after the first may cost: a pass that asks for a retry
 * is redone in full (as is the deleted variant's periodic one), and over a converged host it
 * lists the host's tree and its Cyborg-owned providers — two listings, nothing written.
 */
const PER_HOST_PER_PASS = 2;
/**
 * The live JS heap (right after the variant's last full collection) may exceed the heap at its
 * start by this much: what a leak (a retry queue, an error kept per request) would grow. RSS is
 * printed but not judged: V8 lets a request storm's garbage pile up before it collects and keeps
 * the pages after, so the conflict variant's 3,300 requests reach +150–170 MiB of RSS peak while
 * its heap peaks at ~115–150 MiB and falls back; the proxy's own per-request garbage is in this
 * process too.
 */
const LIVE_HEAP_BOUND_MIB = 50;
const DEADLINE_MS = 600_000;

interface Variant {
  name: string;
  what: string;
  policy: FaultPolicy;
  /**
   * The most requests one fault may cost beyond itself, for the bound: a storm (a fault that makes
   * the sync re-read a host, or retry without pausing) shows as far more.
   */
  perFault: number;
  /** The sync's full-pass period, when the variant needs a pass after the cold start's. */
  intervalMs?: number;
}

const VARIANTS: Variant[] = [
  {
    name: 'conflict',
    what: 'every other write answered 409 placement.concurrent_update, not forwarded',
    policy: (r) => (r.write % 2 === 1 ? { answer: 409, body: CONFLICT } : null),
    // The write again, a re-read of inventories and traits; a refused POST adds a look-up (GET provider).
    perFault: 4,
  },
  {
    name: 'server-errors',
    what: 'every 5th request answered 500, not forwarded',
    policy: (r) => (r.n % 5 === 0 ? { answer: 500, body: SERVER_ERROR } : null),
    // The client sends it again after 50 ms; three in a row leave the provider to the next pass.
    perFault: 1,
  },
  {
    name: 'slow',
    what: 'every 20th request held 10 s, then forwarded (our client waits up to 60 s)',
    policy: (r) => (r.n % 20 === 0 ? { holdMs: 10_000 } : null),
    perFault: 0,
  },
  {
    name: 'deleted',
    what: 'once half the hosts are in sync, 2 of their trees and 5 more deployables deleted on Placement behind our back',
    policy: () => null,
    // Each provider deleted is created again: POST, inventories, traits, and for a root its look-up.
    perFault: 4,
    // Only a full pass lists a host's tree and can see a provider gone: one every 5 s, not the default 60 s.
    intervalMs: 5_000,
  },
];

export interface FaultRun {
  placement: ProductionPlacement;
  conductor: Conductor;
  concurrency: number;
  log: Logger;
}

/** Runs every variant from an empty Placement; true when all of them pass. */
export async function faults(r: FaultRun): Promise<boolean> {
  const views = r.conductor.listAccelerators();
  const desired = views.flatMap((v) => {
    const d = desiredOf(v);
    return d.ok ? [d.desired] : [];
  });
  const hosts = [...new Set(views.map((v) => v.host))];
  const expected = new Set([...hosts.map(rootOf), ...desired.map((d) => d.rpUuid)]);
  console.log(
    `faults: ${views.length} deployables on ${hosts.length} hosts at concurrency ${r.concurrency}, each from an empty Placement, through a fault proxy`,
  );
  console.log("  conductor RSS and heap are the bench process's own (the conductor, the sync and the proxy run in it), sampled every 100 ms");
  let all = true;
  const picked = process.env.BENCH_FAULTS?.split(',');
  for (const v of VARIANTS.filter((x) => !picked || picked.includes(x.name))) {
    await r.placement.fresh();
    all = (await variant(r, v, desired, hosts, expected)) && all;
  }
  return all;
}

async function variant(r: FaultRun, v: Variant, desired: DesiredProvider[], hosts: string[], expected: Set<string>): Promise<boolean> {
  const n = desired.length;
  const proxy = new FaultProxy(r.placement.url, v.policy);
  const url = await proxy.start();
  const o: OursOptions = { deadlineMs: DEADLINE_MS, ...(v.intervalMs ? { intervalMs: v.intervalMs } : {}) };
  let behind: Promise<Behind> | undefined;
  let repairMs = NaN;
  if (v.name === 'deleted') {
    const done: string[] = [];
    o.onHostDone = (host, count) => {
      done.push(host);
      if (count === Math.ceil(hosts.length / 2)) behind = deleteBehind(r.placement.url, done.slice(0, 3));
    };
    o.settle = async () => {
      const b = await behind!;
      repairMs = (await untilListed(r.placement.url, expected, b.at + DEADLINE_MS)) - b.at;
    };
  }
  const rss = sampleRss();
  const passesBefore = await fullPasses();
  let c;
  try {
    c = await ours(url, r.conductor, r.concurrency, r.log, o);
    await proxy.quiet(1_000, 30_000);
  } finally {
    await proxy.stop();
  }
  const mem = rss.stop();
  const passes = (await fullPasses()) - passesBefore;
  const bad = await countMismatch(r.placement.url, expected);
  const differing = await countDiffering(r.placement.url, desired);
  const injected = v.name === 'deleted' ? ((await behind)?.count ?? 0) : proxy.faults;
  const atProxy = proxy.requests / n;
  const atClient = c.tally.requests / n;
  const bound = BASE_PER_DEPLOYABLE + (v.perFault * injected + PER_HOST_PER_PASS * hosts.length * Math.max(0, passes - 1)) / n;
  const growth = mem.peakMiB - mem.beforeMiB;
  // No full collection in the window: the heap never grew enough to need one.
  const held = mem.liveAfterMiB === null ? 0 : mem.liveAfterMiB - mem.heapBeforeMiB;
  const converged = c.pendingHosts === 0 && bad.lost === 0 && bad.extra === 0 && differing === 0;
  const pass = converged && atProxy <= bound && atClient <= bound && held < LIVE_HEAP_BOUND_MIB;
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  console.log(`  ${v.name}: ${v.what}`);
  console.log(
    `    every host in sync after ${s(c.totalMs)}${c.pendingHosts ? ` — ${c.pendingHosts} hosts still not after ${s(DEADLINE_MS)}` : ''}` +
      (v.name === 'deleted' ? `; the ${injected} providers deleted were back ${s(repairMs)} after the deletion` : ''),
  );
  console.log(
    `    ${atProxy.toFixed(2)} requests/deployable at the proxy, ${atClient.toFixed(2)} at our client (bound ${bound.toFixed(2)} = ` +
      `${BASE_PER_DEPLOYABLE} + (${v.perFault} × ${injected} faults + ${PER_HOST_PER_PASS} × ${hosts.length} hosts × ${Math.max(0, passes - 1)} more full passes) / ${n}); ` +
      `${injected} faults injected; ` +
      `our client saw ${c.tally.conflicts} 409s, ${c.tally.serverErrors} 5xx, ${c.tally.noAnswer} without an answer`,
  );
  if (proxy.upstreamErrors.length > 0)
    console.log(`    proxy: ${proxy.upstreamErrors.length} forwarded without an answer: ${proxy.upstreamErrors.slice(0, 3).join('; ')}`);
  console.log(`    Placement: lost ${bad.lost}, extra ${bad.extra}, ${differing} of ${n} deployables with other inventory or traits`);
  console.log(
    `    conductor RSS before ${mem.beforeMiB.toFixed(0)} MiB, peak ${mem.peakMiB.toFixed(0)}, after ${mem.afterMiB.toFixed(0)} ` +
      `(+${growth.toFixed(0)} MiB at the peak); JS heap ${mem.heapBeforeMiB.toFixed(0)}, peak ${mem.heapPeakMiB.toFixed(0)}, live after the last full GC ` +
      `${mem.liveAfterMiB === null ? 'none ran' : `${mem.liveAfterMiB.toFixed(0)} MiB (${held >= 0 ? '+' : ''}${held.toFixed(0)})`}, bound +${LIVE_HEAP_BOUND_MIB}`,
  );
  console.log(
    `    ${pass ? 'pass' : 'FAIL'}: converged equal ${converged ? 'yes' : 'no'}, requests bounded ${atProxy <= bound && atClient <= bound ? 'yes' : 'no'}, memory bounded ${held < LIVE_HEAP_BOUND_MIB ? 'yes' : 'no'}`,
  );
  return pass;
}

interface Behind {
  /** performance.now() when the last one was deleted. */
  at: number;
  count: number;
}

/**
 * Deletes, straight on Placement with the bench's admin token, the whole tree of the first two
 * hosts (children before the root, as Placement requires) and five deployables of the third.
 */
async function deleteBehind(url: string, hosts: string[]): Promise<Behind> {
  const c = new PlacementClient({ url, token: 'admin', timeoutMs: 60_000 });
  let count = 0;
  for (const [i, host] of hosts.entries()) {
    const root = rootOf(host);
    const children = (await c.providersInTree(root)).filter((p) => p.uuid !== root);
    for (const p of i < 2 ? children : children.slice(0, 5)) count += Number(await c.deleteProvider(p.uuid));
    if (i < 2) count += Number(await c.deleteProvider(root));
  }
  return { at: performance.now(), count };
}

/** Polls Placement's listing until it holds exactly the providers expected; resolves with when (performance.now()). */
async function untilListed(url: string, expected: Set<string>, deadline: number): Promise<number> {
  for (;;) {
    const bad = await countMismatch(url, expected);
    if ((bad.lost === 0 && bad.extra === 0) || performance.now() > deadline) return performance.now();
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Full passes any PlacementSync of this process has finished (the bench runs one at a time). */
async function fullPasses(): Promise<number> {
  return (await passCounter.get()).values.filter((x) => x.labels.kind === 'full').reduce((a, x) => a + x.value, 0);
}

function rootOf(host: string): string {
  return stableId('placement-root', host);
}
