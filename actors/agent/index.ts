// The agent process: its drivers, discovery and commands on one compute host, and the local cache
// that survives restarts and lost connections.

export { AgentCache } from './agent-cache.js';
export { Agent } from './agent.js';
export type { AgentOptions } from './agent.js';
