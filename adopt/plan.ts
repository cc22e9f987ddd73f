import type { Change, Recovered } from '../actors/runtime/index.js';
import { hostContextOf, initialContext, NOT_YET, type AcceleratorContext, type Allocation } from '../machines/index.js';
import { AdoptError, AdoptExit } from './errors.js';
import { adoptInventory, type AdoptedDeployable, type IdMap } from './inventory.js';
import type { CyborgData } from './read.js';
import { adoptArqs, adoptProfiles } from './requests.js';
import { emptyTally, type Tally } from './tally.js';

/** The documents collection holding one adoption record per host: Cyborg's uuids beside ours, and where they came from. */
export const ADOPTION_COLLECTION = 'cyborg_adoption';

export interface Plan {
  tally: Tally;
  /** Everything to write, as one commit: one transaction (an adoption is all or nothing). */
  changes: Change[];
  hosts: string[];
}

/**
 * What adopting `data` into a target holding `target` writes, and what it counts. Pure but for
 * asking our fake driver for its ids. Throws an AdoptError for the first row we refuse and for a
 * source host whose accelerators the target already holds from anything but an earlier adoption.
 */
export async function planAdoption(data: CyborgData, target: Recovered, source: string, now = new Date()): Promise<Plan> {
  const tally = emptyTally();
  const inventory = await adoptInventory(data, tally);
  const profiles = new Map(
    target.documents.filter((d) => d.collection === 'device_profiles').map((d) => [d.id, { name: String(d.body.name), groups: d.body.groups }]),
  );
  const { adopted: newProfiles, byId } = adoptProfiles(data, { profiles, arqs: new Set() }, tally);
  const arqs = adoptArqs(data, inventory, byId, { profiles, arqs: new Set(target.arqs.map((a) => a.uuid)) }, tally);

  const adoptedHosts = new Set(target.documents.filter((d) => d.collection === ADOPTION_COLLECTION).map((d) => d.id));
  const heldBy = new Map<string, number>();
  for (const a of target.accelerators) heldBy.set(a.host, (heldBy.get(a.host) ?? 0) + 1);
  for (const h of target.hosts) if (h.devices.length > 0 && !heldBy.has(h.host)) heldBy.set(h.host, h.devices.length);

  const at = now.toISOString();
  const changes: Change[] = newProfiles.map((p) => ({
    type: 'document',
    collection: 'device_profiles',
    id: p.uuid,
    body: { uuid: p.uuid, name: p.name, description: p.description, groups: p.groups, createdAt: p.createdAt, updatedAt: p.updatedAt },
  }));
  const allocations = new Map<string, Allocation[]>();
  for (const a of arqs) {
    if (!a.holds) continue;
    const alloc: Allocation = { handleUuid: a.holds.handleUuid, instanceUuid: a.holds.instanceUuid, arqUuid: a.uuid };
    if (a.context.projectId) alloc.projectId = a.context.projectId;
    allocations.set(a.holds.acceleratorId, [...(allocations.get(a.holds.acceleratorId) ?? []), alloc]);
  }
  const hosts: string[] = [];
  for (const [host, inv] of inventory.hosts) {
    if (adoptedHosts.has(host)) {
      countAlready(tally, inv.ids);
      continue;
    }
    const held = heldBy.get(host);
    if (held)
      throw new AdoptError(
        `host ${host}: the target already holds ${held} accelerators of it that no adoption wrote; adopt only into a cyborg that has never managed the host (docs/adopt.md)`,
        AdoptExit.conflict,
      );
    hosts.push(host);
    countImported(tally, inv.ids);
    changes.push({ type: 'host', host, record: { value: 'online', context: hostContextOf(host) }, drivers: [] });
    changes.push({ type: 'inventory', host, devices: inv.devices });
    for (const d of inv.deployables) {
      const record = acceleratorRecord(d, allocations.get(d.id) ?? [], now);
      changes.push({ type: 'accelerator', id: d.id, host, record });
      changes.push(adoptedTransition('accelerator', d.id, host, record.value, at, data.revision.revision, 'Cyborg deployable'));
    }
    changes.push({
      type: 'document',
      collection: ADOPTION_COLLECTION,
      id: host,
      body: { host, adoptedAt: at, source, revision: data.revision.revision, release: data.revision.release, cyborgToOurs: inv.ids },
    });
  }
  for (const a of arqs) {
    // An ARQ on a host adopted before is new here only if the earlier run skipped it: write it all the same.
    changes.push({ type: 'arq', uuid: a.uuid, record: { value: a.state, context: a.context }, deleted: false });
    changes.push(adoptedTransition('arq', a.uuid, a.context.binding?.hostname, a.state, at, data.revision.revision, `Cyborg state ${a.cyborgState}`));
  }
  return { tally, changes, hosts };
}

/** Ready (Cyborg has no enable step: its deployables were schedulable), programmed with its bitstream, attached while held. */
function acceleratorRecord(d: AdoptedDeployable, allocations: Allocation[], now: Date): { value: string; context: AcceleratorContext } {
  const context: AcceleratorContext = { ...initialContext({ id: d.id, host: d.host, capacity: d.capacity }), allocations };
  if (d.bitstreamId) context.program = { bitstreamId: d.bitstreamId };
  // Cyborg's disabled device (devices.status = maintaining, 2023.2+) is our maintenance mark: reserved, its instances untouched.
  if (d.maintaining) context.maintenance = { device: true, host: false, since: now.getTime() };
  return { value: allocations.length > 0 ? 'attached' : d.bitstreamId ? 'programmed' : 'ready', context };
}

function adoptedTransition(kind: 'accelerator' | 'arq', id: string, host: string | undefined, to: string, at: string, revision: string, what: string): Change {
  return {
    type: 'transition',
    record: {
      kind,
      id,
      ...(host ? { host } : {}),
      event: 'ADOPT',
      from: NOT_YET,
      to: to as typeof NOT_YET,
      at,
      actor: 'cyborg adopt',
      reason: `adopted from OpenStack Cyborg (${what}, schema ${revision})`,
    },
  };
}

function countImported(t: Tally, ids: IdMap): void {
  for (const k of Object.keys(ids) as (keyof IdMap)[]) t[k].imported += Object.keys(ids[k]).length;
}

function countAlready(t: Tally, ids: IdMap): void {
  for (const k of Object.keys(ids) as (keyof IdMap)[]) t[k].already += Object.keys(ids[k]).length;
}
