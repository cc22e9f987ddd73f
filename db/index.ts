// What other folders may import from db/.
export { entities, migrate, openOrm, ormConfig, type OrmOptions } from './config.js';
export { startEmbedded, type EmbeddedDatabase } from './embedded.js';
export { databaseChecks, databaseProbe, openJournal, recordedHoldersOf, redact } from './open.js';
export { PgJournal, type JournalStats, type PgJournalOptions } from './pg-journal.js';
export { queryAudit } from './audit.js';
export type { DB } from './kysely-schema.js';
export { dbCommand } from './cli.js';
export { loadDocuments, loadInventories } from './load.js';
export { schemaStatus, type SchemaStatus } from './schema-status.js';
export { contract, MigrationRefused } from './config.js';
export { MIGRATIONS, pendingOf, startVerdict, migratePlan, contractPlan, type SchemaState, type ReleaseMigrations } from './releases.js';
export { schemaState } from './schema-status.js';
