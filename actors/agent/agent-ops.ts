// What the agent does with a command once it has found the driver: the operation by name, and
// the small facts about commands and observations it needs around it.
import type { CommandMsg, HostObservationMsg } from '../../bus/index.js';
import { canAttach, canInstall, canReset, type Driver, type OpRequest, canManageMig, canRestoreBound, canSetVfCount } from '../../drivers/index.js';
import type { DeployableT } from '../../model/index.js';
import { CyborgError } from '../../errors/index.js';
export async function dispatch(driver: Driver, op: CommandMsg['op'], req: OpRequest): Promise<Record<string, unknown>> {
  switch (op) {
    case 'install':
      return canInstall(driver) ? driver.install(req) : {};
    case 'uninstall':
      return canInstall(driver) ? driver.uninstall(req) : {};
    case 'attach':
      return canAttach(driver) ? driver.prepareAttach(req) : {};
    case 'detach':
      return canAttach(driver) ? driver.releaseAttach(req) : {};
    // A driver without a reset ability has nothing to reset: the conductor clears the health.
    case 'reset':
      return canReset(driver) ? driver.reset(req) : {};
    // A card re-laid out (an operator's MIG layout or VF count): its parameters are checked by the driver.
    case 'mig_layout':
      if (!canManageMig(driver)) throw new CyborgError('driver.failed', `driver ${driver.name} does not manage MIG layouts`);
      return driver.applyMigLayout(String(req.params.address), Array.isArray(req.params.profiles) ? req.params.profiles.map(String) : []);
    case 'vf_count':
      if (!canSetVfCount(driver)) throw new CyborgError('driver.failed', `driver ${driver.name} does not set VF counts`);
      return driver.setVfCount(String(req.params.address), Number(req.params.count));
    // The conductor's re-join reconciliation: a handle an instance holds lost its host side (a reboot).
    case 'restore':
      if (!canRestoreBound(driver)) throw new CyborgError('driver.failed', `driver ${driver.name} cannot re-make what a reboot lost`);
      return driver.restoreBound([{ deployable: req.deployable, handleUuid: String(req.params.handleUuid) }]);
    default:
      throw new CyborgError('bus.invalid_message', `unknown operation ${String(op)}`);
  }
}

/** Operations on a whole card, named by the address in their parameters. */
export const CARD_OPS = new Set<CommandMsg['op']>(['mig_layout', 'vf_count']);

/** The deployable a card operation names when the host does not report it now: its uuid, nothing else. */
export function cardOnly(cmd: CommandMsg): DeployableT {
  return { uuid: cmd.deployableUuid, name: '', numAccelerators: 0, driverName: cmd.driver, attributes: [], attachHandles: [] };
}

export const NOTHING_OBSERVED: HostObservationMsg = Object.freeze({ deployables: [], present: [], cards: [] }) as HostObservationMsg;

/** Several drivers' observations as one. */
export function merged(into: HostObservationMsg | undefined, o: HostObservationMsg): HostObservationMsg {
  if (!into) return { deployables: [...o.deployables], present: [...o.present], cards: [...o.cards] };
  into.deployables.push(...o.deployables);
  into.present.push(...o.present);
  into.cards.push(...o.cards);
  return into;
}

/** Reasons a programming gives when it never touched the card, or put the previous image back. */
const UNTOUCHED = new Set(['checksum_mismatch', 'checksum_missing', 'checksum_unsupported', 'image_missing']);

/** Whether a failed programming left the card as it was (the driver said so in its error's details). */
export function cardUnchanged(err: unknown): boolean {
  const e = err as { code?: unknown; details?: { reason?: unknown; rolledBack?: unknown } } | undefined;
  const d = e?.details;
  return e?.code === 'driver.busy' || d?.rolledBack === true || (typeof d?.reason === 'string' && UNTOUCHED.has(d.reason));
}
