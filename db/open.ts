import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { migrate, openOrm } from './config.js';
import { startEmbedded } from './embedded.js';
import { PgJournal } from './pg-journal.js';

/**
 * Opens the conductor's journal from the configuration: PostgreSQL at `databaseUrl`, or — with
 * none set — the embedded PGlite under `dataDir` (zero setup for `npm start`). Applies pending
 * migrations first, so a fresh database is usable at once.
 */
export async function openJournal(config: Config, log: Logger): Promise<PgJournal> {
  const embedded = config.databaseUrl ? null : await startEmbedded(config.dataDir);
  const url = config.databaseUrl ?? embedded!.url;
  try {
    const orm = await openOrm({ url, pool: embedded ? 1 : config.persistence.pool });
    try {
      const applied = await migrate(orm);
      log.info({ database: embedded ? `embedded:${embedded.dataDir}` : redact(url), applied }, 'database ready');
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

/** A URL fit for a log line: no password. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}
