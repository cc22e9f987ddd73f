import type { Logger } from 'pino';
import { optionSource, type Config } from '../config/index.js';
import { redact, requireMigrated } from './check.js';
import { contract, migrate, openOrm } from './config.js';
import { startEmbedded } from './embedded.js';
import { PgJournal } from './pg-journal.js';

export { redact } from './check.js';

/**
 * Opens the conductor's journal from the configuration: PostgreSQL at `databaseUrl`, or — with
 * none set — the embedded PGlite under `dataDir` (zero setup for `npm start`). Only the embedded
 * database is migrated here (the all-in-one's default); PostgreSQL must be at this code's schema
 * already (`cyborg db migrate`), or the role refuses to start in one line (db/check.ts).
 */
export async function openJournal(config: Config, log: Logger): Promise<PgJournal> {
  const embedded = config.databaseUrl ? null : await startEmbedded(config.dataDir, optionSource(config, 'dataDir'));
  const url = config.databaseUrl ?? embedded!.url;
  try {
    const orm = await openOrm({ url, pool: embedded ? 1 : config.persistence.pool });
    try {
      if (embedded) {
        // The embedded database has one process on it, this one: nothing older to spare, so its
        // contract runs at once after the expand.
        const applied = [...(await migrate(orm)), ...(await contract(orm))];
        log.info({ database: `embedded:${embedded.dataDir}`, applied }, 'database ready');
      } else {
        await requireMigrated(orm, url);
        log.info({ database: redact(url) }, 'database ready');
      }
    } catch (err) {
      await orm.close();
      throw err;
    }
    return new PgJournal({
      orm,
      log,
      unavailableAfterMs: config.persistence.unavailableAfterMs,
      maxBatch: config.persistence.maxBatch,
      // PGlite serves one connection: a second open flush would only wait for it.
      pipeline: embedded ? 1 : config.persistence.pipeline,
      // PGlite's one backend session outlives the pool's connections: a name prepared on one
      // that closed would clash with the next connection's.
      preparedStatements: !embedded && config.persistence.preparedStatements,
      retention: { maxAgeMs: config.persistence.auditMaxAgeMs, maxRows: config.persistence.auditMaxRows, everyMs: config.persistence.auditPruneIntervalMs },
      ...(embedded ? { afterClose: () => embedded.stop() } : {}),
    });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
}

/**
 * The readiness checks a role hosting `journal` adds to its `/readyz`: the database, when the
 * journal is PostgreSQL's (a memory journal has nothing to wait for). Each returns an error text
 * while not ready.
 */
export function databaseChecks(journal: unknown): Record<string, () => string | undefined> {
  return journal instanceof PgJournal ? { database: () => journal.readiness() } : {};
}

/**
 * A probe of the journal's database with a deadline, for a conductor's readiness: it sees a
 * database that hangs as well as one that refuses. Undefined for a journal with no database.
 */
export function databaseProbe(journal: unknown, deadlineMs: number): (() => Promise<string | undefined>) | undefined {
  return journal instanceof PgJournal ? () => journal.probe(deadlineMs) : undefined;
}

/** Which host the database records each id on, when the journal is PostgreSQL's (the report door asks). */
export function recordedHoldersOf(journal: unknown): ((ids: string[]) => Promise<Map<string, string>>) | undefined {
  return journal instanceof PgJournal ? (ids) => journal.recordedHolders(ids) : undefined;
}
