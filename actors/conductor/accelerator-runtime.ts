import type { Logger } from 'pino';
import type { EventHub } from '../../model/index.js';
import type { Journal, Passivation, AcceleratorRecord } from '../runtime/index.js';
import type { AcceleratorLogic } from './accelerator-logic.js';
import type { AcceleratorSpec } from './accelerator-view.js';

/**
 * What every accelerator of a conductor shares: built once (per host actor), not per accelerator —
 * 100,000 copies of five references and a crash handler add up.
 */
/** `Actor`: the accelerator actor (a parameter, so that this file and accelerator-actor.ts do not import each other). */
export interface AcceleratorRuntime<Actor> {
  /**
   * The provided machine to run, shared by many actors (see `acceleratorLogic`): providing a
   * machine copies its whole definition, so one copy per actor would cost ~40 KB each.
   */
  logic: AcceleratorLogic;
  journal: Journal;
  hub: EventHub;
  log: Logger;
  onCrash: (actor: Actor, err: unknown) => void;
  /** Puts idle accelerators' machines to rest (shared by the whole conductor). */
  passivation: Passivation;
}

export interface AcceleratorActorOptions<Actor> {
  spec: AcceleratorSpec;
  record?: AcceleratorRecord;
  runtime: AcceleratorRuntime<Actor>;
}
