// What lets several conductors share a fleet: host leases in JetStream KV, routing of a host's
// messages to its owner, the ARQ home, and a journal fenced by the lease.

export { ARQ_HOME, ArqHome } from './arq-home.js';
export { FencedJournal } from './fenced-journal.js';
export { HostRouter, type RoutedConductor } from './host-router.js';
export { LeaseTable, hostKey } from './lease.js';
