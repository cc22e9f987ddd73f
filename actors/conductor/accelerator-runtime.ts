import type { Logger } from 'pino';
import type { EventHub } from '../../model/index.js';
import type { Journal, Passivation, AcceleratorRecord } from '../runtime/index.js';
import type { AcceleratorActor } from './accelerator-actor.js';
import type { AcceleratorLogic } from './accelerator-logic.js';
import type { AcceleratorSpec } from './accelerator-view.js';

/**
 * What every accelerator of a conductor shares: built once (per host actor), not per accelerator —
 * 100,000 copies of five references and a crash handler add up.
 */
export interface AcceleratorRuntime {
  /**
   * The provided machine to run, shared by many actors (see `acceleratorLogic`): providing a
   * machine copies its whole definition, so one copy per actor would cost ~40 KB each.
   */
  logic: AcceleratorLogic;
  journal: Journal;
  hub: EventHub;
  log: Logger;
  onCrash: (actor: AcceleratorActor, err: unknown) => void;
  /** Puts idle accelerators' machines to rest (shared by the whole conductor). */
  passivation: Passivation;
}

export interface AcceleratorActorOptions {
  spec: AcceleratorSpec;
  record?: AcceleratorRecord;
  runtime: AcceleratorRuntime;
}
