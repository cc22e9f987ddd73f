import { Command, Option } from 'commander';
import { loadConfig } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { migrate, openOrm } from './config.js';
import { startEmbedded } from './embedded.js';
import { redact } from './open.js';
import { schemaStatus } from './schema-status.js';

/**
 * `cyborg db migrate`: applies pending migrations to `[database] connection` / DATABASE_URL (or
 * --database-url), or to the embedded database under the data directory when none is given.
 * `--check` changes nothing: it exits 0 when the database is at the code's schema, 1 when not.
 */
export function dbCommand(): Command {
  const db = new Command('db').description('database maintenance');
  db.command('migrate')
    .description('apply pending schema migrations')
    .addOption(new Option('--database-url <url>', 'PostgreSQL URL (default: the embedded database under --data-dir)').env('DATABASE_URL'))
    .addOption(new Option('--data-dir <dir>', 'where the embedded database lives').env('CYBORG_DATA_DIR'))
    .option('--check', 'apply nothing: exit 1 when the database is not at this code\'s schema (naming what is pending)')
    .action(async (flags: { databaseUrl?: string; dataDir?: string; check?: boolean }, cmd: Command) => {
      const configFiles = cmd.optsWithGlobals<{ configFile?: string[] }>().configFile;
      const config = loadConfig({ databaseUrl: flags.databaseUrl, dataDir: flags.dataDir }, process.env, configFiles ? { configFiles } : {});
      const log = createLogger(config);
      const embedded = config.databaseUrl ? null : await startEmbedded(config.dataDir);
      const url = config.databaseUrl ?? embedded!.url;
      const orm = await openOrm({ url, pool: 1 });
      try {
        if (flags.check) {
          const { pending } = await schemaStatus(orm);
          process.stdout.write(pending.length ? `not at the code's schema; pending: ${pending.join(', ')} (run: cyborg db migrate)\n` : 'at the code\'s schema\n');
          process.exitCode = pending.length ? 1 : 0;
          return;
        }
        const applied = await migrate(orm);
        log.info({ database: embedded ? `embedded:${embedded.dataDir}` : redact(url), applied }, 'migrations applied');
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
      } finally {
        await orm.close();
        await embedded?.stop();
      }
    });
  return db;
}
