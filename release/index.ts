/**
 * The release this code is and the control protocol it speaks, on the ground floor: every role,
 * the bus and the CLI say the same numbers (docs/upgrade.md). A release bumps `PROTOCOL.current`
 * when a bus message or control call changes shape; each role reads that one and the one before,
 * so a fleet is upgraded role by role with old and new side by side.
 */

/** This code's release (semver); package.json and CHANGELOG.md say the same (release/release.test.ts). */
export const RELEASE = '0.2.0';

/**
 * The protocol each release speaks, oldest first. 0.1.0's messages carry no version: a message
 * without one is protocol 1.
 */
export const RELEASES: readonly { release: string; protocol: number }[] = [
  { release: '0.1.0', protocol: 1 },
  { release: '0.2.0', protocol: 2 },
];

export const PROTOCOL = { current: 2, previous: 1 } as const;

/** The newest migration this release ships (db/releases.ts lists them; db/releases.test.ts checks this is its last). */
export const SCHEMA_REVISION = 'Migration20261202010100_contract_old_history';

/** The NATS headers of the bus envelope: the version a message is written in, and the newest its sender reads. */
export const PROTOCOL_HEADER = 'Cyborg-Protocol';
export const PROTOCOL_MAX_HEADER = 'Cyborg-Protocol-Max';

/** Semver order of two `x.y.z` releases; a text that is not one ('unknown') sorts first. */
export function compareReleaseText(a: string, b: string): number {
  const parse = (v: string): number[] => (/^\d+\.\d+\.\d+/.test(v) ? v.split('.').map((x) => parseInt(x, 10)) : [-1, 0, 0]);
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa[i]! !== pb[i]!) return pa[i]! - pb[i]!;
  return 0;
}

/** The release that first spoke `protocol` (for the words of a refusal). */
export function releaseOfProtocol(protocol: number): string | undefined {
  return RELEASES.find((r) => r.protocol === protocol)?.release;
}

export type ProtocolVerdict = { ok: true; version: number } | { ok: false; code: 'bus.protocol_unsupported'; version: number | string; message: string };

/**
 * Reads a message's protocol header: absent is protocol 1 (0.1.0 wrote none); a version this
 * code reads is accepted; anything else — garbled, from the future, too old — is refused in words
 * that name the version and the way out. `reads` is this code's window (a test gives another).
 */
export function readProtocol(raw: string | undefined | null, reads: { current: number; previous: number } = PROTOCOL): ProtocolVerdict {
  const window = `this cyborg ${RELEASE} reads protocols ${reads.previous}–${reads.current}`;
  if (raw === undefined || raw === null || raw === '') return check(1);
  if (!/^[0-9]{1,6}$/.test(raw.trim()))
    return {
      ok: false,
      code: 'bus.protocol_unsupported',
      version: raw.slice(0, 40),
      message: `garbled protocol version ${JSON.stringify(raw.slice(0, 40))}: ${window}; the sender is not a cyborg role, or its bus is broken`,
    };
  return check(Number(raw.trim()));

  function check(v: number): ProtocolVerdict {
    if (v >= reads.previous && v <= reads.current) return { ok: true, version: v };
    if (v > reads.current)
      return {
        ok: false,
        code: 'bus.protocol_unsupported',
        version: v,
        message: `protocol ${v} is from a newer release${named(v)}: ${window}; upgrade this role, or pin the sender with [upgrade_levels] protocol = ${reads.current}`,
      };
    return {
      ok: false,
      code: 'bus.protocol_unsupported',
      version: v,
      message: `protocol ${v}${named(v)} is ${reads.current - v} releases behind: ${window}; upgrade the sender to ${releaseOfProtocol(reads.previous) ?? `the release of protocol ${reads.previous}`} first (docs/upgrade.md)`,
    };
  }
}

function named(v: number): string {
  const r = releaseOfProtocol(v);
  return r ? ` (cyborg ${r})` : '';
}

/** A role process another one heard on the bus: what it is and which protocol it reads. */
export interface Peer {
  role: string;
  host: string;
  /** Its release: its envelope says it; a message without one is 0.1.0's. */
  release: string;
  /** The newest protocol it reads. */
  reads: number;
  /** The protocol its last message was written in. */
  speaks: number;
  /** The subject it was last heard on (without the deployment prefix). */
  via: string;
  at: number;
}

/** How a role chooses what it speaks: `auto` from what its peers announce, or pinned by the operator (`[upgrade_levels] protocol`). */
export interface ProtocolLevelOptions {
  pin?: number;
  /** A peer of the older protocol keeps this role on it this long after it was last heard; also how long a starting role listens before it speaks up. */
  peerWindowMs: number;
  now?: () => number;
}

/** Peers remembered at most (the newest kept): a fleet's agents and its few conductors and apis. */
const MAX_PEERS = 4096;

/**
 * The protocol this process speaks now, negotiated from what its peers announce (each message's
 * envelope; 0.1.0's has none): the older one while a peer that reads only it was heard within the
 * window (and during the first window after start, before the peers are heard), the current one
 * once none is left. A pin overrides it, as Nova's `[upgrade_levels]` does.
 */
export class ProtocolLevel {
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly peers = new Map<string, Peer>();
  /**
   * The peers whose last message said they read only an older protocol, and when: what `speaks()`
   * asks at every message sent — empty once a fleet is upgraded, where `seen()` walks every agent
   * (a 4,096-peer filter per envelope made the conductor's sends cost O(fleet)).
   */
  private readonly older = new Map<string, number>();

  constructor(readonly opts: ProtocolLevelOptions) {
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
  }

  /** A peer was heard. */
  heard(p: Omit<Peer, 'at'>): void {
    const key = `${p.role}/${p.host}`;
    const at = this.now();
    this.peers.delete(key);
    this.peers.set(key, { role: p.role, host: p.host, release: p.release, reads: p.reads, speaks: p.speaks, via: p.via, at });
    if (this.peers.size > MAX_PEERS) {
      const evicted = this.peers.keys().next().value!;
      this.peers.delete(evicted);
      this.older.delete(evicted);
    }
    if (p.reads < PROTOCOL.current) this.older.set(key, at);
    else this.older.delete(key);
  }

  /** The peers heard within the window, newest last. */
  seen(): Peer[] {
    const t = this.now();
    return [...this.peers.values()].filter((p) => t - p.at < this.opts.peerWindowMs);
  }

  /** The version this process writes its messages in now. */
  speaks(): number {
    if (this.opts.pin !== undefined) return this.opts.pin;
    const t = this.now();
    if (t - this.startedAt < this.opts.peerWindowMs) return PROTOCOL.previous;
    for (const [key, at] of this.older) {
      if (t - at < this.opts.peerWindowMs) return PROTOCOL.previous;
      this.older.delete(key); // out of the window for good: time only moves on
    }
    return PROTOCOL.current;
  }

  /** What /readyz, INFO and the roster say about it. */
  describe(): { release: string; speaks: number; reads: number[]; pinned?: number; olderPeers?: string[] } {
    const older = this.seen()
      .filter((p) => p.reads < PROTOCOL.current)
      .map((p) => `${p.role} ${p.host} (${p.release})`);
    return {
      release: RELEASE,
      speaks: this.speaks(),
      reads: [PROTOCOL.previous, PROTOCOL.current],
      ...(this.opts.pin !== undefined ? { pinned: this.opts.pin } : {}),
      ...(older.length ? { olderPeers: older.slice(0, 8) } : {}),
    };
  }
}

/** The headers that name the sender in the envelope (absent from 0.1.0's messages: the subject says what it can). */
export const RELEASE_HEADER = 'Cyborg-Release';
export const ROLE_HEADER = 'Cyborg-Role';
export const HOST_HEADER = 'Cyborg-Host';
