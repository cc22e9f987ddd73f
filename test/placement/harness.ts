import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { FakeDriverOptions } from '../../drivers/fake/index.js';
import { PlacementClient, type Inventories } from '../../openstack/placement/client.js';
import { freePort } from '../support/ports.js';
import { placementClient, startStack, type Stack, type StackOptions } from '../support/stack.js';
import type { AcceleratorView } from '../../model/index.js';
import { eventually } from '../support/eventually.js';

/** A host name no other test (or earlier run against the same Placement) uses. */
export function uniqueHost(tag = 'pl'): string {
  return `${tag}-${randomUUID().slice(0, 8)}`;
}

export { placementClient };

export interface Synced extends Stack {
  host: string;
  client: PlacementClient;
  accelerator(namePart: string): AcceleratorView;
}

/**
 * Conductor + one fake-driver agent + a PlacementSync against a real Placement. The fake host
 * has Cyborg's fake FPGA, `gpus` GPUs and `nics` NICs with VFs.
 */
export async function startSynced(o: {
  url: string;
  host?: string;
  createRoots?: boolean;
  intervalMs?: number;
  fake?: Omit<FakeDriverOptions, 'host'>;
  timing?: StackOptions['timing'];
  /** The operator API on `app` (Fastify's inject). */
  api?: boolean;
}): Promise<Synced> {
  const host = o.host ?? uniqueHost();
  const stack = await startStack({
    hosts: [host],
    fake: o.fake ?? { gpus: 1, nics: 1, vfsPerNic: 2 },
    timing: o.timing,
    api: o.api,
    placement: { url: o.url, createRoots: o.createRoots, intervalMs: o.intervalMs },
  });
  return Object.assign(stack, {
    host,
    client: stack.placement,
    accelerator: (part: string) => {
      const v = stack.conductor.listAccelerators().find((a) => a.name.includes(part));
      if (!v) throw new Error(`no accelerator named like ${part}`);
      return v;
    },
  });
}

/** The compute node's provider, as nova-compute would create it. */
export async function createComputeNode(client: PlacementClient, host: string): Promise<string> {
  const p = await client.createProvider({ uuid: randomUUID(), name: host });
  return p.uuid;
}

/** Deletes a host's provider tree, children first (tests leave the shared Placement tidy). */
/** A story's teardown: the stack stopped and its host's providers removed from the shared Placement. */
export async function stopAndTidy(s: Synced | undefined): Promise<void> {
  if (!s) return;
  await s.stop();
  await deleteTree(s.client, s.host);
}

export async function deleteTree(client: PlacementClient, host: string): Promise<void> {
  const root = (await client.providersByName(host))[0];
  if (!root) return;
  const tree = await client.providersInTree(root.uuid);
  for (const p of tree.filter((x) => x.uuid !== root.uuid)) await client.deleteProvider(p.uuid).catch(() => undefined);
  await client.deleteProvider(root.uuid).catch(() => undefined);
}

/** Waits until every accelerator of the runtime says `in_sync`. */
export function allInSync(s: Synced, timeoutMs = 30_000): Promise<boolean> {
  return eventually(() => s.conductor.listAccelerators().every((a) => s.sync.status(a.id)?.status === 'in_sync'), {
    what: 'every accelerator in sync',
    timeoutMs,
  });
}

/** An inventory as Placement reports it with Cyborg's fields (Placement's defaults elsewhere). */
export function inventory(rc: string, total: number, reserved: number): Inventories {
  return { [rc]: { total, reserved, min_unit: 1, max_unit: total, step_size: 1, allocation_ratio: 1 } };
}

/** Waits until Placement shows `reserved` for the class on the provider. */
export function reservedBecomes(s: Synced, rpUuid: string, rc: string, reserved: number, what: string): Promise<boolean> {
  return eventually(async () => (await s.client.getInventories(rpUuid)).inventories[rc]?.reserved === reserved, { what, timeoutMs: 15_000 });
}

/** Enables an accelerator and waits until Placement has freed its inventory. */
export async function enableInPlacement(s: Synced, v: AcceleratorView): Promise<void> {
  await s.conductor.act(v.id, { type: 'ENABLE' });
  await reservedBecomes(s, v.rpUuid, v.resourceClass!, 0, `${v.name} unreserved`);
}

/** Nova's scheduler claiming `n` of a provider's class in Placement; returns the consumer. */
export async function allocate(client: PlacementClient, rpUuid: string, rc: string, n: number): Promise<string> {
  const consumer = randomUUID();
  await client.putAllocations(consumer, {
    allocations: { [rpUuid]: { resources: { [rc]: n } } },
    project_id: randomUUID(),
    user_id: randomUUID(),
    consumer_generation: null,
  });
  return consumer;
}

/** Placement's own sums over the stack's (not removed) providers, by resource class: what capacity must equal. */
export async function placementSums(s: Synced): Promise<Record<string, { total: number; reserved: number; used: number; free: number }>> {
  const out: Record<string, { total: number; reserved: number; used: number; free: number }> = {};
  for (const a of s.conductor.listAccelerators().filter((x) => x.state !== 'removed')) {
    const [inv, usages] = await Promise.all([s.client.getInventories(a.rpUuid), s.client.getUsages(a.rpUuid)]);
    for (const [rc, r] of Object.entries(inv.inventories)) {
      const o = (out[rc] ??= { total: 0, reserved: 0, used: 0, free: 0 });
      const used = usages[rc] ?? 0;
      o.total += r.total;
      o.reserved += r.reserved;
      o.used += used;
      o.free += r.total - r.reserved - used;
    }
  }
  return out;
}

/** A fake host of `gpus` GPUs (and the fake FPGA) synced to a real Placement, its health judged on `after` checks. */
export function startGpuHost(url: string, gpus: number, after: number): Promise<Synced> {
  return startSynced({
    url,
    api: true,
    createRoots: true,
    fake: { gpus, nics: 0 },
    timing: { healthEnterAfter: after, healthLeaveAfter: after, healthStableMs: 0 },
  });
}

/** What one provider holds, read back from Placement. */
export async function readProvider(client: PlacementClient, uuid: string): Promise<{ inventories: Inventories; traits: string[] } | null> {
  const p = await client.getProvider(uuid);
  if (!p) return null;
  const [inv, tr] = await Promise.all([client.getInventories(uuid), client.getTraits(uuid)]);
  return { inventories: inv.inventories, traits: [...tr.traits].sort() };
}

const PEER = resolve(import.meta.dirname, '../../../shared/peers/placement');

/** A private Placement on its own port and state dir (never the shared one on 8778). */
export class PrivatePlacement {
  private port = 0;

  /** `env`: more of the starter's settings (PLACEMENT_THREADS=1: sqlite without lock fights, say). */
  constructor(private readonly env: Record<string, string> = {}) {}

  static available(): boolean {
    return existsSync(`${PEER}/start.sh`) && existsSync(`${PEER}/stop.sh`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts it (on a free port the first time; on the same port and database after a stop). */
  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    await this.run('start.sh');
  }

  async stop(clean = false): Promise<void> {
    await this.run('stop.sh', clean ? { PLACEMENT_CLEAN: '1' } : {});
  }

  private async run(script: string, extra: Record<string, string> = {}): Promise<void> {
    await promisify(execFile)('bash', [`${PEER}/${script}`], {
      env: {
        ...process.env,
        PLACEMENT_PORT: String(this.port),
        PLACEMENT_STATE_DIR: `/tmp/placement-test-${this.port}`,
        PLACEMENT_KEEP_DB: '1',
        ...this.env,
        ...extra,
      },
      timeout: 120_000,
    });
  }
}
