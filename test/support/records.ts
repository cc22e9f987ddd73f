import type { MachineRecord } from '../../actors/runtime/index.js';

/**
 * A machine record of whatever context a test needs, typed as the record it stands in for: the
 * journal stores a context as data, so its tests hand it only the fields they look at (or a
 * shape no machine makes, to see it refused).
 */
export function recordOf<C>(value: string, context: Record<string, unknown> = {}): MachineRecord<C> {
  return { value, context: context as C };
}
