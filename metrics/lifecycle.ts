import { Gauge, type Registry } from 'prom-client';
import { AcceleratorStates, type AcceleratorState } from '../machines/index.js';
import type { AcceleratorView, FleetSource } from '../model/index.js';
import type { DeviceRow } from './devices.js';

/**
 * The series that say a card is stuck: how long each has been in its lifecycle state, and the
 * deadline of the driver operation it runs. A card in `error` retried unseen, and one whose
 * operation outlived its deadline (a timer lost: the machine always gives up on its own), are
 * what `CyborgAcceleratorInError` and `CyborgTransitionStuck` read (deploy/prometheus/).
 */

/** The driver operation each transient state runs (the accelerator machine's `operation` states). */
const OPERATION_OF: Partial<Record<AcceleratorState, string>> = {
  [AcceleratorStates.installing]: 'install',
  [AcceleratorStates.programming]: 'program',
  [AcceleratorStates.attaching]: 'attach',
  [AcceleratorStates.detaching]: 'detach',
  [AcceleratorStates.resetting]: 'reset',
  [AcceleratorStates.uninstalling]: 'uninstall',
};

/** The operation a card runs now (a transient state) or last failed (in `error`); `none` otherwise. */
export function operationOf(view: Pick<AcceleratorView, 'state' | 'error'>): string {
  if (view.state === AcceleratorStates.error) return view.error?.op ?? 'none';
  return OPERATION_OF[view.state] ?? 'none';
}

type StateLabel = 'host' | 'accelerator' | 'name' | 'state' | 'op';

export function lifecycleGauges(conductor: FleetSource, rows: (now?: number) => DeviceRow[], registers: Registry[]): () => void {
  // When each card entered the state it is in, as the committed transitions tell it. A card not
  // seen moving since this process started counts from its last commit: never longer than it is.
  const entered = new Map<string, { state: string; at: number }>();
  const stop = conductor.hub.subscribe((ev) => {
    if (ev.kind !== 'accelerator' || entered.get(ev.id)?.state === ev.to) return;
    if (ev.to === AcceleratorStates.removed) entered.delete(ev.id);
    else entered.set(ev.id, { state: ev.to, at: Date.parse(ev.at) });
  });
  const since = (view: AcceleratorView): number => {
    const e = entered.get(view.id);
    return e?.state === view.state ? e.at : Date.parse(view.updatedAt);
  };
  const labelsOf = (r: DeviceRow): Record<StateLabel, string> => ({ ...r.labels, op: operationOf(r.view) });
  new Gauge<StateLabel>({
    name: 'cyborg_accelerator_state_seconds',
    help: 'Seconds an accelerator has been in its lifecycle state; op: the driver operation it runs (a transient state) or that failed (error), else none',
    labelNames: ['host', 'accelerator', 'name', 'state', 'op'],
    registers,
    collect() {
      this.reset();
      const now = Date.now();
      for (const r of rows(now)) this.set(labelsOf(r), Math.max(0, (now - since(r.view)) / 1000));
    },
  });
  new Gauge<StateLabel>({
    name: 'cyborg_accelerator_operation_timeout_seconds',
    help: "The conductor's deadline for the driver operation an accelerator runs (present only while one runs)",
    labelNames: ['host', 'accelerator', 'name', 'state', 'op'],
    registers,
    collect() {
      this.reset();
      for (const r of rows()) {
        const op = OPERATION_OF[r.view.state];
        if (op) this.set(labelsOf(r), conductor.opDeadlineMs(op) / 1000);
      }
    },
  });
  return stop;
}
