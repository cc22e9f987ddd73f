import type { Logger } from 'pino';
import { AcceleratorStates, type CardIdentity } from '../../machines/index.js';
import type { HardwareIdentityT, RequestMeta } from '../../model/index.js';
import type { AcceleratorActor } from './accelerator-actor.js';

/**
 * A device's identity is its slot and what its card says about itself (a GPU UUID, a MAC, a
 * PCIe serial: drivers/generic/identity.ts). Ids come from host and slot, so the record of a
 * slot outlives its card; this is where a report's serial is compared with the recorded one.
 *
 * - The same serial, or none read (the card gives none, its tool failed), or one read from
 *   another source than the recorded one (nvidia-smi failing, so the PCIe serial is read in
 *   place of the GPU UUID): nothing changes.
 * - Nothing recorded yet (a card first seen, a record from before identities): recorded.
 * - Another serial on a card that comes back (it had left discovery: unplugged, hot-plugged
 *   again): another card — its record is retired and it starts afresh (REPLACED).
 * - Another serial on a card that never left: one read is not enough (a flaky tool may answer
 *   otherwise once). It is logged and audited (IDENTITY_DOUBT) and nothing changes; the next
 *   report with that serial again confirms the replacement, one with the recorded serial shows
 *   the tool flaky (IDENTITY_FLAKY), and the record stays.
 * - A card an instance holds is never retired under it: the replacement is logged and audited
 *   (REPLACEMENT_HELD) and made once nobody holds it.
 */
export type IdentityVerdict =
  | { kind: 'unchanged' }
  | { kind: 'first'; read: HardwareIdentityT }
  | { kind: 'doubt'; recorded: CardIdentity; read: HardwareIdentityT }
  | { kind: 'flaky'; recorded: CardIdentity; between: string }
  | { kind: 'replaced'; recorded: CardIdentity; read: HardwareIdentityT };

/** What a report's identity means for the record (pure); `returning`: the card had left discovery. */
export function judgeIdentity(
  recorded: CardIdentity | undefined,
  read: HardwareIdentityT | undefined,
  doubt: string | undefined,
  returning: boolean,
): IdentityVerdict {
  if (!read) return { kind: 'unchanged' };
  if (!recorded) return { kind: 'first', read };
  // Read another way (nvidia-smi failing, the PCIe serial read instead of the GPU UUID): not comparable.
  if (read.source !== recorded.source) return { kind: 'unchanged' };
  if (read.serial === recorded.serial) return doubt === undefined ? { kind: 'unchanged' } : { kind: 'flaky', recorded, between: doubt };
  if (returning || doubt === read.serial) return { kind: 'replaced', recorded, read };
  return { kind: 'doubt', recorded, read };
}

/** The audit's words for a device whose card says nothing about itself. */
export const NO_SERIAL = 'none: the hardware gives no serial, so another card in this slot cannot be told from this one';

/** The DISCOVERED row's arguments: the card's serial, or that it gives none. */
export function identityArgs(read: HardwareIdentityT | undefined): Record<string, string> {
  return read ? { serial: read.serial, source: read.source } : { identity: NO_SERIAL };
}

/**
 * Applies a report's identity to one recorded accelerator: records a first serial, retires the
 * record of a card replaced (REPLACED), or says what it did not act on. Returns true when the
 * accelerator was replaced (the caller sends no REDISCOVERED then).
 */
export function applyIdentity(actor: AcceleratorActor, read: HardwareIdentityT | undefined, returning: boolean, meta: RequestMeta, log: Logger): boolean {
  const verdict = judgeIdentity(actor.context.identity, read, actor.identityDoubt?.serial, returning);
  const about = { acceleratorId: actor.id, host: actor.host, accelerator: actor.deployable.name };
  switch (verdict.kind) {
    case 'unchanged':
      return false;
    case 'first':
      actor.system({ type: 'IDENTIFIED', ...verdict.read }, meta);
      return false;
    case 'doubt': {
      actor.identityDoubt = { serial: verdict.read.serial, held: false };
      const args = { recorded: verdict.recorded.serial, read: verdict.read.serial, source: verdict.read.source };
      log.warn({ ...about, ...args }, 'card identity: the serial read is not the recorded one; nothing changes until the next report confirms it');
      void actor.note('IDENTITY_DOUBT', args, meta, 'serial read differs from the recorded one: confirming at the next report').catch(() => undefined);
      return false;
    }
    case 'flaky': {
      actor.identityDoubt = null;
      const args = { recorded: verdict.recorded.serial, between: verdict.between };
      log.warn({ ...about, ...args }, 'card identity: the serial read otherwise once, then as recorded: a flaky tool; the record stays');
      void actor.note('IDENTITY_FLAKY', args, meta, 'serial read otherwise once, then as recorded: the record stays').catch(() => undefined);
      return false;
    }
    case 'replaced':
      return replace(actor, verdict, meta, log, about);
  }
}

function replace(
  actor: AcceleratorActor,
  verdict: Extract<IdentityVerdict, { kind: 'replaced' }>,
  meta: RequestMeta,
  log: Logger,
  about: Record<string, string>,
): boolean {
  const args = { previous: verdict.recorded.serial, serial: verdict.read.serial, source: verdict.read.source };
  const from = actor.state;
  if (actor.system({ type: 'REPLACED', previous: verdict.recorded.serial, ...verdict.read }, meta)) {
    actor.identityDoubt = null;
    log.warn(
      { ...about, ...args, from },
      'card replaced: another card in the slot; the old record is retired, the new card starts inactive with no health history',
    );
    return true;
  }
  // Held by an instance (or an operation under way): said once per new serial, made once free.
  if (actor.identityDoubt?.serial !== verdict.read.serial || !actor.identityDoubt.held) {
    actor.identityDoubt = { serial: verdict.read.serial, held: true };
    const holders = actor.context.allocations.map((a) => a.instanceUuid).join(',');
    log.warn({ ...about, ...args, state: from, holders }, 'card replaced under a holder: the record stays until nobody holds it');
    const reason = from === AcceleratorStates.attached ? `held by ${holders}: replaced once released` : `in ${from}: replaced once it settles`;
    void actor.note('REPLACEMENT_HELD', args, meta, reason).catch(() => undefined);
  }
  return false;
}
