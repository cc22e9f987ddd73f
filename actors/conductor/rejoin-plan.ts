import type { HostObservationMsg } from '../../bus/index.js';
import type { DeviceT } from '../../model/index.js';

/**
 * What a re-joining host lost, found by comparing what the conductor recorded (the handles
 * instances hold, the inventory before the agent's restart) with what the agent reports and
 * observes now. Pure: rejoin.ts runs the steps.
 */

/** A handle an instance holds on one of the host's accelerators (a Bound ARQ's, or an operator's attach). */
export interface HeldHandle {
  acceleratorId: string;
  handleUuid: string;
  instanceUuid: string;
  arqUuid?: string;
  /** The instance's project, where the host says (a running guest's Nova metadata). */
  projectId?: string;
}

/** A card's layout as a driver applies it: its MIG profiles (one per GPU instance) or its VF count. */
export type CardLayout = { kind: 'mig'; profiles: string[] } | { kind: 'vf'; count: number };

export type RejoinStep =
  /** The handle's host side (an mdev, a vGPU-typed VF, a binding) is gone: the driver makes it again. */
  | { kind: 'restore'; held: HeldHandle }
  /** The card lost the layout its held deployables come from (MIG instances, VFs): applied again, then the handles. */
  | { kind: 'relayout'; deviceUuid: string; address: string; driver: string; layout: CardLayout; held: HeldHandle[] }
  /** Nothing to re-apply can bring it back: said on the accelerator, the instance left as it is. */
  | { kind: 'flag'; held: HeldHandle; reason: string }
  /** A running guest holds a handle no record holds (given before the host was ours): recorded as its instance's. */
  | { kind: 'adopt'; held: HeldHandle };

export interface RejoinInput {
  held: readonly HeldHandle[];
  /** The inventory before this report (the conductor's record). */
  recorded: readonly DeviceT[];
  /** The inventory just reported. */
  devices: readonly DeviceT[];
  observed: HostObservationMsg;
}

const MIG_NAME = /_MIG_(.+)$/;

/**
 * The layout a card had when it was recorded, read from the deployables its driver reported: a
 * MIG deployable per profile (`<host>_<address>_MIG_<profile>`, a handle per GPU instance, as
 * Cyborg's NVIDIA driver names them), or a deployable per VF (trait `CUSTOM_VF`, as Intel's NIC
 * driver reports them; any but the PF's own on a QAT card). Undefined for a card without either.
 */
export function recordedLayout(device: DeviceT): CardLayout | undefined {
  const profiles = device.deployables.flatMap((d) => {
    const p = MIG_NAME.exec(d.name)?.[1];
    return p ? d.attachHandles.map(() => p) : [];
  });
  if (profiles.length > 0) return { kind: 'mig', profiles: profiles.sort() };
  const vfs = device.deployables.filter((d) => isVf(device, d)).length;
  return vfs > 0 ? { kind: 'vf', count: vfs } : undefined;
}

/**
 * A deployable that is one VF of its card: trait `CUSTOM_VF` (Intel's NIC driver), or on a QAT
 * card any deployable but the PF's own (Cyborg's QAT driver reports no traits; a PF with VFs
 * reports only its VFs, named `<host>_<VF address>`).
 */
function isVf(device: DeviceT, dep: DeviceT['deployables'][number]): boolean {
  if (dep.attributes.some((a) => a.key.startsWith('trait') && a.value === 'CUSTOM_VF')) return true;
  const pf = device.type === 'QAT' ? pciAddressOf(device.controlPath.info) : undefined;
  return pf !== undefined && !dep.name.endsWith(`_${pf}`);
}

/** Whether the card as observed has the layout it was recorded with. */
function sameLayout(want: CardLayout, seen: HostObservationMsg['cards'][number] | undefined): boolean {
  if (!seen) return false;
  if (want.kind === 'mig') return (seen.migLayout ?? []).slice().sort().join() === want.profiles.join();
  return seen.vfCount === want.count;
}

/** A card's PCI address from its control path (`{"domain": "0000", "bus": "1b", …}`). */
export function pciAddressOf(info: string): string | undefined {
  try {
    const j = JSON.parse(info) as Record<string, string>;
    return j.domain && j.bus && j.device && j.function !== undefined ? `${j.domain}:${j.bus}:${j.device}.${j.function}`.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** The steps that bring the host back to what its held handles need, in the order to run them. */
export function planRejoin(input: RejoinInput): RejoinStep[] {
  const now = new Map(input.devices.flatMap((d) => d.deployables.map((dep) => [dep.uuid, dep] as const)));
  const reported = new Map(input.devices.map((d) => [d.uuid, d]));
  const recordedCard = new Map(input.recorded.flatMap((d) => d.deployables.map((dep) => [dep.uuid, d] as const)));
  const looked = new Set(input.observed.deployables);
  const present = new Set(input.observed.present);
  const cards = new Map(input.observed.cards.map((c) => [c.deviceUuid, c]));
  const steps: RejoinStep[] = [];
  const relayouts = new Map<string, Extract<RejoinStep, { kind: 'relayout' }>>();
  for (const held of input.held) {
    const dep = now.get(held.acceleratorId);
    if (dep) {
      if (!dep.attachHandles.some((h) => h.uuid === held.handleUuid)) {
        steps.push({
          kind: 'flag',
          held,
          reason: `attach handle ${held.handleUuid} of instance ${held.instanceUuid} is no longer on the device after the host re-joined`,
        });
      } else if (looked.has(dep.uuid) && !present.has(held.handleUuid)) {
        steps.push({ kind: 'restore', held });
      }
      continue;
    }
    // Gone from the report: a card still there may have lost the layout it came from.
    const card = recordedCard.get(held.acceleratorId);
    const layout = card ? recordedLayout(card) : undefined;
    const address = card ? pciAddressOf(card.controlPath.info) : undefined;
    if (card && layout && address && reported.has(card.uuid) && cards.has(card.uuid) && !sameLayout(layout, cards.get(card.uuid))) {
      const step = relayouts.get(card.uuid) ?? { kind: 'relayout' as const, deviceUuid: card.uuid, address, driver: card.driver, layout, held: [] };
      step.held.push(held);
      relayouts.set(card.uuid, step);
      continue;
    }
    steps.push({ kind: 'flag', held, reason: `the host no longer reports this device after it re-joined; instance ${held.instanceUuid} holds it` });
  }
  return [...relayouts.values(), ...steps, ...adoptions(input, now)];
}

/**
 * The handles the host's running guests hold that no record holds: adopted for the guest's
 * instance. One a record gives to another instance is flagged: the host and the records disagree
 * on who has the device, and only an operator can tell which is right.
 */
function adoptions(input: RejoinInput, now: ReadonlyMap<string, DeviceT['deployables'][number]>): RejoinStep[] {
  const recorded = new Map(input.held.map((h) => [h.handleUuid, h]));
  const steps: RejoinStep[] = [];
  for (const g of input.observed.guests ?? []) {
    if (!now.get(g.deployableUuid)?.attachHandles.some((h) => h.uuid === g.handleUuid)) continue;
    const held: HeldHandle = {
      acceleratorId: g.deployableUuid,
      handleUuid: g.handleUuid,
      instanceUuid: g.instanceUuid,
      ...(g.projectId ? { projectId: g.projectId } : {}),
    };
    const record = recorded.get(g.handleUuid);
    if (!record) steps.push({ kind: 'adopt', held });
    else if (record.instanceUuid !== g.instanceUuid) {
      steps.push({
        kind: 'flag',
        held: record,
        reason: `attach handle ${g.handleUuid} is recorded for instance ${record.instanceUuid}, but the host's running guest of instance ${g.instanceUuid} holds it`,
      });
    }
  }
  return steps;
}
