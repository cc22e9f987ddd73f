// The machine runtime: the one host every XState machine runs on, passivation of idle machines,
// and the journal port actors hand their changes to (db/ implements it).

export { callBudgetLeft, callDeadline, withCallDeadline } from './call-deadline.js';
export type { CallDeadline } from './call-deadline.js';
export { MemoryJournal } from './journal.js';
export type { AcceleratorRecord, ArqRecord, Change, CommitOptions, HostRecord, Journal, MachineRecord, Recovered } from './journal.js';
export { MachineHost } from './machine-host.js';
export type { MachineOwner, StepSnapshot } from './machine-host.js';
export { Passivation } from './passivation.js';
export type { Restable } from './passivation.js';
