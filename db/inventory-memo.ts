import { createHash } from 'node:crypto';
import { canonicalJson } from './merge.js';
import type { DeviceT } from '../model/index.js';

/** Per device (its control-path info): its position and canonical JSON as last committed. */
export type Fingerprint = Map<string, string>;

/**
 * The fingerprint of a report (stub devices are not stored, so not counted). A digest of each
 * device's canonical JSON, not the JSON itself: the memo lives as long as the conductor, and a
 * copy of every inventory would cost more memory than the accelerators' actors.
 */
export function fingerprint(devices: DeviceT[]): Fingerprint {
  const memo = FINGERPRINTS.get(devices);
  if (memo) return memo;
  const out: Fingerprint = new Map();
  devices.forEach((d, position) => {
    if (!d.stub) out.set(d.controlPath.info, `${position}|${createHash('sha1').update(canonicalJson(d)).digest('base64')}`);
  });
  FINGERPRINTS.set(devices, out);
  return out;
}

/**
 * Memoized per report (reports are never mutated: a new discovery is a new array), so the
 * journal can compute it when the report is committed, off the flush's critical path.
 */
const FINGERPRINTS = new WeakMap<DeviceT[], Fingerprint>();

/**
 * Which devices of a host changed since the last committed report: `null` when none did (the
 * report is not written at all), `'all'` when nothing is known of the host, else the control-path
 * infos to diff (new, changed, moved or gone). Agents re-send their full inventory on every
 * discovery; this keeps an unchanged report free and a changed one proportional to the change.
 */
export function changedDevices(prev: Fingerprint | undefined, next: Fingerprint): Set<string> | null | 'all' {
  if (!prev) return 'all';
  const changed = new Set<string>();
  for (const [cpid, fp] of next) if (prev.get(cpid) !== fp) changed.add(cpid);
  for (const cpid of prev.keys()) if (!next.has(cpid)) changed.add(cpid);
  return changed.size === 0 ? null : changed;
}
