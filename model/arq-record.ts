/**
 * What the database derives from an ARQ's machine record: Cyborg's columns (project, device
 * profile, binding) come from its context, and the state Cyborg's API shows from its state. The
 * ARQ machine owns both; db/ takes them here, through the shared contract, and imports no machine.
 */
export { cyborgState, type ArqContext } from '../machines/index.js';
