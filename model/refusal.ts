import type { AcceleratorView } from './accelerator.js';
import { whyUnavailable } from './availability.js';
import { AcceleratorStates } from '../machines/index.js';

const held = (a: AcceleratorView): string => a.allocations.map((x) => x.instanceUuid).join(', ');

/**
 * Why an accelerator refuses `event` now, with the way out — what a 409 says beside the state
 * and the events allowed (`accelerator X is attached: REMOVE is not allowed now — …`).
 * Undefined when there is nothing better to say than the state.
 */
export function whyRefused(a: AcceleratorView, event: string): string | undefined {
  if (a.tags.includes('busy')) return `an operation is under way on it (${a.state}): try again once it is done`;
  const name = a.name;
  switch (event) {
    case 'ATTACH':
      return whyUnavailable(a);
    case 'REMOVE':
    case 'DISABLE':
    case 'PROGRAM':
    case 'RESET':
      if (a.allocations.length > 0) {
        return `instance(s) ${held(a)} hold it: detach them first (cyborg accelerator detach ${name} --instance <uuid>), or, if the card is dead and its detach failed, release them (cyborg accelerator release ${name} --instance <uuid>)`;
      }
      if (a.state === AcceleratorStates.inactive && event !== 'REMOVE') return `it is not enabled: cyborg accelerator enable ${name} first`;
      return undefined;
    case 'ENABLE':
      return a.state === AcceleratorStates.inactive ? undefined : `it is already enabled (${a.state})`;
    case 'DETACH':
      return a.allocations.length === 0 ? 'no instance is attached to it' : undefined;
    case 'RETRY':
      return a.state === AcceleratorStates.error ? undefined : 'nothing failed on it: retry is for a failed driver operation';
    case 'CLEAR_HEALTH':
      return (a.health?.status ?? 'ok') === 'ok' ? 'its health is ok: there is no fault to clear' : undefined;
    case 'END_MAINTENANCE':
      return a.maintenance ? undefined : 'it carries no maintenance mark';
    case 'RELEASE':
      return a.state === AcceleratorStates.error || a.state === AcceleratorStates.offline
        ? `no such instance on it (on it: ${held(a) || 'none'})`
        : `release is for a card whose detach failed or whose host is lost; detach the instance instead (cyborg accelerator detach ${name})`;
    default:
      return undefined;
  }
}
