import { acceleratorMachine } from '../../machines/index.js';
import { acceleratorLogic, type AcceleratorLogic } from './accelerator-logic.js';
import { arqLogic, type ArqLogic } from './arq-actor.js';
import { hostLogic, type HostLogic } from './host-logic.js';
import { healthPolicyOf, opDeadlineMs, type Timing } from './timing.js';
import type { TreeEffects } from './tree-effects.js';

export type { TreeEffects };

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
