import type { Peer } from './index.js';

/**
 * The roster of a fleet, as upgrade-check and `db contract` read it: each conductor of 0.2.0 or
 * later keeps an entry in the lease bucket (`roster.<id>`, beside the leases, which 0.1.0's
 * conductors skip) with what it is and every peer it heard within the window — agents by their
 * heartbeats, apis by their control calls, other conductors by their forwards, each with the
 * release and protocol its envelope announced (0.1.0's announce none).
 */
export interface RosterEntry {
  role: 'conductor';
  id: string;
  host: string;
  release: string;
  speaks: number;
  reads: number;
  peers: Peer[];
  /** When written, by the writer's clock (ms since the epoch). */
  at: number;
  /** How long after `at` the entry counts: the writer's peer window. */
  windowMs: number;
}

export function rosterKey(id: string): string {
  return `roster.${Buffer.from(id).toString('base64url')}`;
}

export const ROSTER_PREFIX = 'roster.';
