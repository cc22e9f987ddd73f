import { AcceleratorStates } from '../machines/index.js';
import type { AcceleratorView } from './accelerator.js';

/**
 * Why an accelerator cannot take a new instance now, and the way out, in the words an operator
 * (or Nova's `BindFailed` reason) should read: the drain, the maintenance mark or disable, the
 * quarantine with its reason, the handles all held, the state. Undefined when it can.
 * Causes are said in that order: the one an operator set on purpose first.
 */
export function whyUnavailable(a: AcceleratorView, freeHandle = a.allocations.length < Math.max(1, a.capacity)): string | undefined {
  const name = `accelerator ${a.name} (${a.id}) on ${a.host}`;
  const m = a.maintenance;
  if (m?.scopes.includes('host')) {
    return `${name} is out of service: its host ${a.host} is being drained (no new instances); the way out: wait for the drain's work, or cancel it with \`cyborg host drain ${a.host} --cancel\``;
  }
  if (m?.scopes.includes('device')) {
    return `${name} is out of service: disabled for maintenance by an operator (reserved in Placement); the way out: \`openstack accelerator device enable ${a.deviceUuid}\` or \`cyborg accelerator maintenance ${a.name} --cancel\``;
  }
  const h = a.health;
  if (h && h.status === 'quarantined') {
    return `${name} is quarantined${h.fatal ? ' (fatal)' : ''}: ${h.reason ?? 'unhealthy'}; the way out: ${h.fatal ? `\`cyborg accelerator reset ${a.name}\` once no instance holds it, or \`cyborg accelerator clear-health ${a.name}\`` : 'it returns by itself after healthy checks, or `cyborg accelerator clear-health`'}`;
  }
  if (a.missing) return `${name} is no longer reported by its host's discovery; the way out: put the card back, or remove it`;
  switch (a.state) {
    case AcceleratorStates.inactive:
      return `${name} is not enabled; the way out: \`cyborg accelerator enable ${a.name}\` (or \`openstack accelerator device enable ${a.deviceUuid}\`)`;
    case AcceleratorStates.error:
      return `${name} is in error (${a.error?.op ?? 'an operation'} failed: ${a.error?.reason ?? 'unknown'}); the way out: \`cyborg accelerator retry ${a.name}\` or remove it`;
    case AcceleratorStates.offline:
      return `${name} is offline: its host's agent is lost; the way out: bring the agent on ${a.host} back`;
    case AcceleratorStates.removed:
      return `${name} was removed from its host`;
    default:
      break;
  }
  if (!freeHandle) {
    return `${name} has no free attach handle: all ${Math.max(1, a.capacity)} are held (${a.allocations.map((x) => x.instanceUuid).join(', ')}); the way out: pick another accelerator, or detach one of them`;
  }
  // Not asked of `allowed`: a view built while a commit is in flight lists none, and a bind
  // queued behind the previous one must not fail for that; the machine's guard still decides.
  return undefined;
}
