// What other folders may import from adopt/: the `cyborg adopt` command, the adoptability check
// `cyborg status upgrade-check` runs, and the exit codes both document.
export { adoptCommand } from './command.js';
export { adoptability, type CheckCode } from './check.js';
export { AdoptError, AdoptExit } from './errors.js';
export { ADOPTION_COLLECTION } from './plan.js';
