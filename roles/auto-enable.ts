import type { Logger } from 'pino';
import { AcceleratorStates } from '../machines/index.js';

/** The events that bring a card nobody enabled: discovered, back after removal, another card in a known slot. */
const NEW_CARD = new Set(['DISCOVERED', 'REDISCOVERED', 'REPLACED']);

/** What auto-enable needs of a conductor: its committed transitions, and the operator's ENABLE. */
export interface Enabler {
  readonly hub: { subscribe(listener: (ev: { kind: string; id: string; event: string; to: string }) => void): () => void };
  act(id: string, event: { type: 'ENABLE' }, meta?: { actor?: string }): Promise<unknown>;
}

/**
 * `[agent] auto_enable`: each accelerator this conductor discovers (or sees come back after it was
 * removed, or replaced by another card) is enabled at once, as an operator's `enable` would, so a cloud has new devices ready
 * for Nova without a person. Off by default: a new device waits `inactive` (the seed spec's choice).
 * Returns the unsubscribe.
 */
export function startAutoEnable(conductor: Enabler, log: Logger): () => void {
  return conductor.hub.subscribe((ev) => {
    if (ev.kind !== 'accelerator' || ev.to !== AcceleratorStates.inactive || !NEW_CARD.has(ev.event)) return;
    // After this transition's commit: the ENABLE is a change of its own.
    queueMicrotask(() => {
      conductor.act(ev.id, { type: 'ENABLE' }, { actor: 'auto-enable' }).then(
        () => log.info({ acceleratorId: ev.id }, 'enabled a newly discovered accelerator ([agent] auto_enable)'),
        (err: unknown) => log.warn({ acceleratorId: ev.id, err: (err as Error).message }, 'could not enable a newly discovered accelerator'),
      );
    });
  });
}
