// The ids every room derives from stable facts (a resource provider's uuid3, an attribute's or a
// control path's id): on the ground floor, so that the api, the database and the Placement client
// take them without loading the drivers. Pure: node:crypto only, no room of ours.
import { hash } from 'node:crypto';

/** RFC 4122 DNS namespace, the one Cyborg passes to uuid3 for resource-provider uuids. */
export const NAMESPACE_DNS = '6ba7b810-9dad-11d1-80b4-00c04fd430c8';
/** Our own namespace for ids derived from stable facts (host name, PCI address). */
export const NAMESPACE_CYBORG = 'a5d4c4f0-5c3e-4c1b-9f2e-3d7c2b1e0a99';

const NAMESPACE_BYTES = new Map<string, Buffer>();

/**
 * RFC 4122 name-based uuid (3: md5, 5: sha1). One-shot hash over one buffer, the namespace's
 * bytes parsed once: every deployable's resource provider and every attribute's and control
 * path's id goes through here, 300,000 times in a 10,000-host fleet's cold start.
 */
function nameBased(algorithm: 'md5' | 'sha1', version: 3 | 5, namespace: string, name: string): string {
  let ns = NAMESPACE_BYTES.get(namespace);
  if (!ns) NAMESPACE_BYTES.set(namespace, (ns = Buffer.from(namespace.replace(/-/g, ''), 'hex')));
  const input = Buffer.allocUnsafe(16 + Buffer.byteLength(name, 'utf8'));
  ns.copy(input, 0);
  input.write(name, 16, 'utf8');
  const bytes = hash(algorithm, input, 'buffer');
  bytes[6] = (bytes[6]! & 0x0f) | (version << 4);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const h = bytes.toString('hex', 0, 16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Python's `uuid.uuid3(namespace, name)`: how Cyborg names a deployable's resource provider. */
export function uuid3(namespace: string, name: string): string {
  return nameBased('md5', 3, namespace, name);
}

/** A stable id from stable facts, so restarts and re-registration never mint new ids. */
export function stableId(...parts: string[]): string {
  return nameBased('sha1', 5, NAMESPACE_CYBORG, parts.join('\u0000'));
}

/** Cyborg's deployable naming: every char outside [A-Za-z0-9_-] becomes `_`. */
export function sanitizeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}

const RP_UUIDS = new WeakMap<{ name: string }, string>();

/**
 * A deployable's resource provider (uuid3 of its name, or the provider it keeps from an adoption:
 * `rpUuid`), memoized per deployable object: its actor and its inventory rows both need it, from
 * the same (never mutated) report.
 */
export function rpUuidOf(deployable: { name: string; rpUuid?: string }): string {
  if (deployable.rpUuid) return deployable.rpUuid;
  let rp = RP_UUIDS.get(deployable);
  if (rp === undefined) RP_UUIDS.set(deployable, (rp = uuid3(NAMESPACE_DNS, deployable.name)));
  return rp;
}
