import { Command, Option } from 'commander';
import { loadConfig } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { migrate, openOrm } from './config.js';
import { startEmbedded } from './embedded.js';
import { redact } from './open.js';

/**
 * `cyborg db migrate`: applies pending migrations to DATABASE_URL (or --database-url), or to the
 * embedded database under the data directory when neither is given.
 */
export function dbCommand(): Command {
  const db = new Command('db').description('database maintenance');
  db.command('migrate')
    .description('apply pending schema migrations')
    .addOption(new Option('--database-url <url>', 'PostgreSQL URL (default: the embedded database under --data-dir)').env('DATABASE_URL'))
    .addOption(new Option('--data-dir <dir>', 'where the embedded database lives').env('CYBORG_DATA_DIR'))
    .action(async (flags: { databaseUrl?: string; dataDir?: string }) => {
      const config = loadConfig({ databaseUrl: flags.databaseUrl, dataDir: flags.dataDir });
      const log = createLogger(config);
      const embedded = config.databaseUrl ? null : await startEmbedded(config.dataDir);
      const url = config.databaseUrl ?? embedded!.url;
      const orm = await openOrm({ url, pool: 1 });
      try {
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
