/**
 * `npm run bench:placement`: the Placement sync against a real OpenStack Placement.
 *
 *   1. time to converge N deployables (default 1,000: 100 hosts × 10) from an empty Placement,
 *      and Placement requests per deployable — against a baseline measured in the same run:
 *      Cyborg's own report sequence (conductor `provider_report`: ensure class, GET provider,
 *      POST, GET + PUT inventory, PUT each trait, GET + PUT traits), one deployable after another;
 *   2. time to repair 100 out-of-band changes (traits and inventories edited by hand) in one
 *      full pass — against a cold reconciler (no remembered generations: reads every provider).
 *
 * Uses a private Placement (fresh sqlite, its own port) so the shared one is not loaded; pass
 * PLACEMENT_URL=… BENCH_SHARED=1 to use an existing one. BENCH_HOSTS, BENCH_CONCURRENCY,
 * BENCH_BASELINE_N (deployables the slow baseline is timed on, default 100) tune it.
 */
import { pino } from 'pino';
import { Agent } from '../actors/agent/index.js';
import { Conductor } from '../actors/conductor/index.js';
import { MemoryJournal } from '../actors/runtime/index.js';
import { PlacementSync } from '../actors/services/index.js';
import { InProcessBus } from '../bus/index.js';
import { FakeDriver, DriverRegistry } from '../drivers/index.js';
import { NAMESPACE_DNS, uuid3 } from '../ids/index.js';
import { PlacementClient } from '../openstack/placement/index.js';
import { PrivatePlacement } from '../test/placement/harness.js';
import type { AcceleratorView } from '../model/index.js';

const HOSTS = Number(process.env.BENCH_HOSTS ?? 100);
// 1: the private Placement is sqlite-backed, where parallel writers only fight over its lock.
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);
const CHANGES = 100;
/** Cyborg's sequence is timed on this many deployables (it is slow) and compared per deployable. */
const BASELINE_N = Number(process.env.BENCH_BASELINE_N ?? 100);
const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });
const timing = { driverOpTimeoutMs: 5_000, staleAfterMs: 600_000, lostAfterMs: 1_200_000, heartbeatIntervalMs: 600_000 };
const run = Date.now().toString(36);

const priv = process.env.BENCH_SHARED ? null : new PrivatePlacement();
if (priv) await priv.start();
const url = priv?.url ?? process.env.PLACEMENT_URL ?? 'http://127.0.0.1:8778';
const client = (): PlacementClient => new PlacementClient({ url, token: 'admin', timeoutMs: 30_000 });
let views: AcceleratorView[] = [];

try {
  // --- the accelerators: 100 hosts × (fake FPGA + 2 GPUs + 1 NIC with 7 VFs) = 1,000 --------
  const bus = new InProcessBus(log);
  const conductor = new Conductor({ bus, journal: new MemoryJournal(), log, timing });
  await conductor.start();
  const agents: Agent[] = [];
  for (let h = 0; h < HOSTS; h++) {
    const host = `bench-${run}-${h}`;
    const agent = new Agent({
      host,
      bus,
      drivers: new DriverRegistry([new FakeDriver({ host, gpus: 2, nics: 1, vfsPerNic: 7 })]),
      log,
      heartbeatIntervalMs: 600_000,
      discoveryIntervalMs: 3_600_000,
    });
    await agent.start();
    agents.push(agent);
  }
  views = conductor.listAccelerators();
  const n = views.length;
  console.log(`Placement ${url} (${priv ? 'private, empty sqlite' : 'shared'}), ${HOSTS} hosts, ${n} deployables, concurrency ${CONCURRENCY}`);

  // --- 1. converge from empty -----------------------------------------------------------------
  const c1 = client();
  const sync = newSync(conductor, c1);
  let t = performance.now();
  sync.start();
  await until(() => views.every((v) => sync.status(v.id)?.status === 'in_sync'));
  const convergeMs = performance.now() - t;
  const perDeployable = c1.requests / n;
  sync.stop();

  const c0 = client();
  t = performance.now();
  const sample = views.slice(0, BASELINE_N);
  for (const v of sample) await cyborgReport(c0, `cyb-${v.name}`, v.host, v.resourceClass!, v.capacity, v.traits);
  const baselineMs = (performance.now() - t) * (n / sample.length);
  const baselinePerDeployable = c0.requests / sample.length;

  // --- 2. repair 100 out-of-band changes --------------------------------------------------------
  const cw = client();
  const warm = newSync(conductor, cw);
  warm.start();
  await warm.reconcileNow();
  await scribble(c1, views.slice(0, CHANGES));
  const c2 = client();
  const before = cw.requests;
  t = performance.now();
  await warm.reconcileNow();
  const repairMs = performance.now() - t;
  const repairRequests = cw.requests - before;
  await verify(c2, views.slice(0, CHANGES));
  warm.stop();

  await scribble(c1, views.slice(CHANGES, 2 * CHANGES));
  const cold = newSync(conductor, client());
  t = performance.now();
  cold.start();
  await cold.reconcileNow();
  const coldMs = performance.now() - t;
  await verify(c2, views.slice(CHANGES, 2 * CHANGES));
  cold.stop();

  console.log(`converge ${n} deployables from empty: ${(convergeMs / 1000).toFixed(2)} s (${(n / (convergeMs / 1000)).toFixed(0)} deployables/s)`);
  console.log(
    `  baseline, Cyborg's report sequence one by one (timed on ${sample.length}, scaled to ${n}): ${(baselineMs / 1000).toFixed(2)} s → ${(baselineMs / convergeMs).toFixed(2)}× our time`,
  );
  console.log(
    `Placement requests per deployable: ${perDeployable.toFixed(2)} (baseline ${baselinePerDeployable.toFixed(2)} → ratio ${(perDeployable / baselinePerDeployable).toFixed(2)})`,
  );
  console.log(`repair ${CHANGES} out-of-band changes (one full pass over ${n}): ${(repairMs / 1000).toFixed(2)} s, ${repairRequests} requests`);
  console.log(`  baseline, cold reconciler reading every provider: ${(coldMs / 1000).toFixed(2)} s → ${(coldMs / repairMs).toFixed(2)}× our time`);

  for (const a of agents) await a.stop();
  await conductor.stop();
} finally {
  if (priv) await priv.stop(true);
}

function newSync(source: Conductor, c: PlacementClient): PlacementSync {
  return new PlacementSync({
    source,
    client: c,
    log,
    resourceProviderName: '{host}',
    createRootProviders: true,
    intervalMs: 3_600_000,
    concurrency: CONCURRENCY,
  });
}

/** Trait deleted by hand on even ones, inventory total edited by hand on odd ones. */
async function scribble(c: PlacementClient, vs: AcceleratorView[]): Promise<void> {
  for (const [i, v] of vs.entries()) {
    if (i % 2 === 0) {
      const t = await c.getTraits(v.rpUuid);
      await c.putTraits(
        v.rpUuid,
        t.generation,
        t.traits.filter((x) => x !== 'OWNER_CYBORG'),
      );
    } else {
      const inv = await c.getInventories(v.rpUuid);
      await c.putInventories(v.rpUuid, inv.generation, { [v.resourceClass!]: { total: v.capacity + 5, max_unit: v.capacity + 5 } });
    }
  }
}

async function verify(c: PlacementClient, vs: AcceleratorView[]): Promise<void> {
  for (const v of vs) {
    const [t, inv] = await Promise.all([c.getTraits(v.rpUuid), c.getInventories(v.rpUuid)]);
    if (!t.traits.includes('OWNER_CYBORG') || inv.inventories[v.resourceClass!]?.total !== v.capacity) {
      throw new Error(`provider ${v.name} was not repaired`);
    }
  }
}

/** Cyborg's conductor `provider_report` for one new deployable, call for call. */
async function cyborgReport(c: PlacementClient, name: string, hostName: string, rc: string, total: number, traits: string[]): Promise<void> {
  const root = (await c.providersByName(hostName))[0]!.uuid;
  if (rc.startsWith('CUSTOM_')) await c.ensureResourceClass(rc);
  const uuid = uuid3(NAMESPACE_DNS, name);
  if (!(await c.getProvider(uuid))) await c.createProvider({ uuid, name, parentUuid: root });
  const inv = await c.getInventories(uuid);
  await c.putInventories(uuid, inv.generation, { [rc]: { total, max_unit: total } });
  for (const t of traits) await c.ensureTrait(t);
  const cur = await c.getTraits(uuid);
  await c.putTraits(uuid, cur.generation, [...new Set([...cur.traits, ...traits])]);
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 20));
}
