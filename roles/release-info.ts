import type { NatsBus } from '../bus/index.js';
import { PROTOCOL, RELEASE, SCHEMA_REVISION } from '../release/index.js';

/**
 * What every role says about its release on `/readyz`, its service INFO and `cyborg --version`:
 * the release, the schema revision it ships, and the protocol it reads and speaks now (a bus of
 * its own: negotiated; none, in the all-in-one: the current one).
 */
export function releaseInfo(bus?: NatsBus): {
  release: string;
  schema: string;
  protocol: { speaks: number; reads: number[]; pinned?: number; olderPeers?: string[] };
} {
  return {
    release: RELEASE,
    schema: SCHEMA_REVISION,
    protocol: bus ? bus.protocol.describe() : { speaks: PROTOCOL.current, reads: [PROTOCOL.previous, PROTOCOL.current] },
  };
}
