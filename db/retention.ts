import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from './kysely-schema.js';

/** How much of the transition log is kept: rows younger than `maxAgeMs`, and the newest `maxRows`. 0 keeps all. */
export interface Retention {
  maxAgeMs: number;
  maxRows: number;
  /** How often the oldest rows are deleted. */
  everyMs: number;
}

/** Most rows one delete statement removes: a large backlog goes in several short transactions. */
const BATCH = 10_000;

/**
 * Deletes the log's oldest rows beyond the retention, oldest first, in batches; returns how many
 * went. The only statement that ever deletes from the log, and it deletes nothing else: rows are
 * never updated. The cut by count is found on the (at, seq) index (the newest `maxRows` rows'
 * oldest), so the delete reads only what it removes.
 */
export async function pruneLog(db: Kysely<DB>, r: Pick<Retention, 'maxAgeMs' | 'maxRows'>, now = Date.now()): Promise<number> {
  let removed = 0;
  if (r.maxAgeMs > 0) {
    const before = new Date(now - r.maxAgeMs);
    for (;;) {
      const res = await sql`delete from transition_log where seq in (
        select seq from transition_log where at < ${before} order by at, seq limit ${BATCH})`.execute(db);
      const n = Number(res.numAffectedRows ?? 0);
      removed += n;
      if (n < BATCH) break;
    }
  }
  if (r.maxRows > 0) {
    const { rows } = await sql<{
      at: Date;
      seq: string;
    }>`select at, seq from transition_log order by at desc, seq desc offset ${r.maxRows - 1} limit 1`.execute(db);
    const edge = rows[0];
    if (edge) {
      for (;;) {
        const res = await sql`delete from transition_log where seq in (
          select seq from transition_log where (at, seq) < (${edge.at}::timestamptz, ${edge.seq}::bigint) order by at, seq limit ${BATCH})`.execute(db);
        const n = Number(res.numAffectedRows ?? 0);
        removed += n;
        if (n < BATCH) break;
      }
    }
  }
  return removed;
}

/**
 * Runs `pruneLog` every `everyMs` (first soon after start) until the returned stop is called.
 * A failed pass is logged and tried again at the next tick; two conductors pruning at once only
 * delete the same old rows.
 */
export function startRetention(db: Kysely<DB>, r: Retention, log: Logger): () => Promise<void> {
  if (r.maxAgeMs <= 0 && r.maxRows <= 0) return async () => {};
  let running: Promise<void> | null = null;
  const tick = (): void => {
    if (running) return;
    running = pruneLog(db, r)
      .then((removed) => {
        if (removed > 0) log.info({ removed, maxAgeMs: r.maxAgeMs, maxRows: r.maxRows }, 'transition log: oldest rows removed by retention');
      })
      .catch((err: unknown) => log.warn({ err }, 'transition log retention failed; retried at the next tick'))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, r.everyMs);
  timer.unref();
  const first = setTimeout(tick, Math.min(r.everyMs, 5_000));
  first.unref();
  return async () => {
    clearInterval(timer);
    clearTimeout(first);
    await running;
  };
}
