/**
 * Cyborg's alembic revisions (cyborg/db/sqlalchemy/alembic/versions/), oldest first, with the
 * release whose head each one is. Facts read from openstack/cyborg, not code of it: 9.0.0 (Zed,
 * bc8b25fe) ends at 4cc1d79978fc; 6c77bd6afea5 (devices.status, 2023.2) is the head of every
 * release since, master (24e13c6a) included.
 */
export const CYBORG_REVISIONS = [
  { revision: 'f50980397351', release: 'before 9.0.0' },
  { revision: 'd6f033d8fa5b', release: 'before 9.0.0' },
  { revision: 'ede4e3f1a232', release: 'before 9.0.0' },
  { revision: '589ff20545b7', release: 'before 9.0.0' },
  { revision: 'c1b5abada09c', release: 'before 9.0.0' },
  { revision: '57539722e5cf', release: 'before 9.0.0' },
  { revision: '22fb1af2d51e', release: 'before 9.0.0' },
  { revision: '7b696fd94949', release: 'before 9.0.0' },
  { revision: '62bcf2610c5d', release: 'before 9.0.0' },
  { revision: '7a4fd0fc3f8c', release: 'before 9.0.0' },
  { revision: '60d8ac91fd20', release: 'before 9.0.0' },
  { revision: '7e6f1f107f2b', release: 'before 9.0.0' },
  { revision: '899cead40bc9', release: 'before 9.0.0' },
  { revision: '4cc1d79978fc', release: '9.0.0 (Zed) to 10.0.0' },
  { revision: '6c77bd6afea5', release: '11.0.0 (2023.2) to master' },
] as const;

/** The oldest revision we adopt from: Cyborg 9.0.0's head. */
export const OLDEST_ADOPTED = '4cc1d79978fc';

export type Revision = { revision: string; release: string; hasDeviceStatus: boolean };

/** The revision's facts, or why it cannot be adopted from. */
export function revisionOf(revision: string): { ok: true; value: Revision } | { ok: false; why: string } {
  const i = CYBORG_REVISIONS.findIndex((r) => r.revision === revision);
  const oldest = CYBORG_REVISIONS.findIndex((r) => r.revision === OLDEST_ADOPTED);
  if (i < 0)
    return { ok: false, why: `alembic_version ${revision} is newer than any Cyborg revision known here (the newest is ${CYBORG_REVISIONS.at(-1)!.revision})` };
  if (i < oldest)
    return {
      ok: false,
      why: `alembic_version ${revision} is older than Cyborg 9.0.0 (${OLDEST_ADOPTED}): upgrade Cyborg to 9.0.0 or later first (cyborg-dbsync upgrade)`,
    };
  const r = CYBORG_REVISIONS[i]!;
  return {
    ok: true,
    value: { revision: r.revision, release: r.release, hasDeviceStatus: i >= CYBORG_REVISIONS.findIndex((x) => x.revision === '6c77bd6afea5') },
  };
}
