import type { Config } from '../config/index.js';
import { connectNats } from '../bus/index.js';
import { PROTOCOL, RELEASE, compareReleaseText } from '../release/index.js';
import { ROSTER_PREFIX, type RosterEntry } from '../release/roster.js';

/** One role process seen, as upgrade-check lists it. */
export interface RoleSeen {
  host: string;
  role: string;
  release: string;
  /** The newest protocol it reads. */
  protocol: number;
  /** Who saw it: itself (a conductor's own entry or lease record) or the conductor that heard it. */
  seenBy: string;
}

export interface Roster {
  roles: RoleSeen[];
  /** Why the roster may be incomplete (no bus configured, no conductor of this release running). */
  blind?: string;
}

const dec = new TextDecoder();

/**
 * The fleet's roles as the lease bucket says (release/roster.ts): each conductor's lease record
 * (0.1.0's carry no release), each 0.2.0 conductor's roster entry and the peers it heard within
 * its window. Entries past their window are gone.
 */
export async function readRoster(config: Config, now = Date.now()): Promise<Roster> {
  if (!config.natsUrl) return { roles: [], blind: 'no [DEFAULT] transport_url: a single process (all-in-one), no other role to see' };
  const nc = await connectNats(config.natsUrl, config.nats, { name: 'cyborg-upgrade-check', waitOnFirstConnect: false, maxReconnectAttempts: 0 });
  try {
    const prefix = config.distributed.subjectPrefix;
    // Imported here: cyborg's program (the all-in-one too) loads this file, JetStream KV only `status` needs.
    const { Kvm } = await import('@nats-io/kv');
    const kv = await new Kvm(nc).open(`${prefix ? `${prefix}_` : ''}cyborg_leases`).catch(() => undefined);
    if (!kv) return { roles: [], blind: 'no lease bucket: no conductor has run on this bus' };
    const records = new Map<string, unknown>();
    for await (const key of await kv.keys()) {
      if (!key.startsWith('conductor.') && !key.startsWith(ROSTER_PREFIX)) continue;
      const e = await kv.get(key);
      if (!e || e.operation !== 'PUT') continue;
      try {
        records.set(key, JSON.parse(dec.decode(e.value)));
      } catch {
        /* not ours to read */
      }
    }
    const roster = [...records]
      .filter(([k]) => k.startsWith(ROSTER_PREFIX))
      .map(([, v]) => v as RosterEntry)
      .filter((r) => now - r.at < r.windowMs);
    const withEntry = new Set(roster.map((r) => r.id));
    const roles: RoleSeen[] = [];
    for (const [k, v] of records) {
      if (!k.startsWith('conductor.')) continue;
      const rec = v as { id: string; expiresAt: number };
      // A lease record past its expiry (by its writer's clock, a second's slack) is a conductor gone.
      if (rec.expiresAt + 1_000 < now || withEntry.has(rec.id)) continue;
      roles.push({ host: rec.id, role: 'conductor', release: '0.1.0', protocol: 1, seenBy: 'its lease record (no release: 0.1.0)' });
    }
    const peers = new Map<string, RoleSeen>();
    for (const r of roster) {
      roles.push({ host: r.host, role: 'conductor', release: r.release, protocol: r.reads, seenBy: `itself (${r.id})` });
      for (const p of r.peers) {
        if (p.role === 'unknown' || p.role === 'operator' || now - p.at > r.windowMs) continue;
        const key = `${p.role}/${p.host}`;
        const have = peers.get(key);
        if (!have || compareReleaseText(p.release, have.release) < 0)
          peers.set(key, { host: p.host, role: p.role, release: p.release, protocol: p.reads, seenBy: r.id });
      }
    }
    // A conductor heard by another is on the list already, by its own entry or lease record.
    for (const p of peers.values()) if (p.role !== 'conductor' || p.release !== RELEASE) roles.push(p);
    roles.sort((a, b) => a.role.localeCompare(b.role) || a.host.localeCompare(b.host));
    return { roles, ...(roster.length === 0 ? { blind: `no conductor of ${RELEASE} is running: it is what hears the agents and apis` } : {}) };
  } finally {
    await nc.close();
  }
}

/** The roles seen that are older than this release (or read an older protocol): contract must wait for them. */
export function olderRoles(roster: Roster): RoleSeen[] {
  return roster.roles.filter((r) => r.protocol < PROTOCOL.current || compareReleaseText(r.release, RELEASE) < 0);
}
