import { acceleratorMachine, type BoundTo, type Binding, type DriverOpInput } from '../../machines/index.js';
import { acceleratorLogic, type AcceleratorLogic } from './accelerator-logic.js';
import { arqLogic, type ArqLogic } from './arq-actor.js';
import { hostLogic, type HostLogic } from './host-logic.js';
import { healthPolicyOf, opDeadlineMs, type Timing } from './timing.js';

/**
 * What the machines' effects do in the actor tree, by name: the supervisor implements each (it
 * finds the actor an effect is for); the machine files provide them to XState
 * (`machine.provide({ actions, actors, delays })`: host-logic.ts, accelerator-logic.ts, arq-actor.ts).
 */
export interface TreeEffects {
  /** A driver operation of an accelerator: to its own host actor, which sends it to its agent. */
  runDriverOp(input: DriverOpInput): Promise<Record<string, unknown>>;
  /** A host's agent is lost, or back: every accelerator of it is told. */
  hostLost(host: string): void;
  hostReturned(host: string): void;
  /** When the host's agent last gave a sign of life (its heartbeats stay in its actor). */
  lastSignOf(host: string): number | undefined;
  /** An ARQ's bind and release effects, through the binder (another conductor's accelerator included). */
  bindArq(uuid: string, binding: Binding): Promise<BoundTo>;
  releaseArq(uuid: string, boundTo: BoundTo | null): Promise<void>;
}

/** The machines of one conductor with their effects provided, built once and shared by every actor (providing copies the definition). */
export interface ProvidedMachines {
  host: HostLogic;
  accelerator: AcceleratorLogic;
  arq: ArqLogic;
}

export function provideMachines(tree: TreeEffects, timing: Timing, base: typeof acceleratorMachine = acceleratorMachine): ProvidedMachines {
  return {
    host: hostLogic(timing, tree),
    // Bound, not wrapped: an operation goes from the machine to the tree with no function in between.
    accelerator: acceleratorLogic(tree.runDriverOp.bind(tree), opDeadlineMs.bind(null, timing), base, healthPolicyOf(timing)),
    arq: arqLogic(tree),
  };
}
