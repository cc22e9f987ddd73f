import { Command, Option } from 'commander';
import { loadConfig, optionSource, StartupError, StartupExit, createLogger, type Config } from '../config/index.js';
import { RELEASE } from '../release/index.js';
import { contract, migrate, MigrationRefused, openOrm } from './config.js';
import { startEmbedded } from './embedded.js';
import { createErrorFor, databaseMissing, databaseName, redact, startupErrorFor } from './check.js';
import { schemaStatus } from './schema-status.js';

/**
 * `cyborg db migrate`: applies pending migrations to `[database] connection` / DATABASE_URL (or
 * --database-url). A database that does not exist is created only with `--create`: without it a
 * misspelt name was created silently and the conductor then ran on it, empty (issue 42).
 * The embedded database under the data directory only with --embedded: a configuration whose
 * `[database]` never reached the loader must not be answered by a new, empty local database.
 * `--check` changes nothing: it exits 0 when the database is at the code's schema, 1 when not.
 */
export interface DbCommandDeps {
  /**
   * The roles alive older than this release, each named (host, role, release), as the fleet's
   * roster says; `blind` when it cannot see them all (cli/roster.ts).
   */
  olderRoles?: (config: Config) => Promise<{ older: string[]; blind?: string }>;
}

export function dbCommand(deps: DbCommandDeps = {}): Command {
  const db = new Command('db').description('database maintenance');
  db.command('migrate')
    .description('apply pending schema migrations')
    .addOption(new Option('--database-url <url>', 'PostgreSQL URL (default: the embedded database under --data-dir)').env('DATABASE_URL'))
    .addOption(new Option('--data-dir <dir>', 'where the embedded database lives').env('CYBORG_DATA_DIR'))
    .option('--embedded', 'migrate the embedded database under the data directory (what the all-in-one runs on without [database] connection)')
    .option('--check', "apply nothing: exit 1 when the database is not at this code's schema (naming what is pending)")
    .option('--create', 'create the database first when it does not exist (else: refused, naming it)')
    .action(async (flags: { databaseUrl?: string; dataDir?: string; check?: boolean; embedded?: boolean; create?: boolean }, cmd: Command) => {
      const { configFile, configDir } = cmd.optsWithGlobals<{ configFile?: string[]; configDir?: string[] }>();
      // Only what was typed: commander also fills these from DATABASE_URL / CYBORG_DATA_DIR, which
      // the loader reads itself, and an error must name the variable the operator set, not a flag.
      const typed = (name: 'databaseUrl' | 'dataDir'): string | undefined => (cmd.getOptionValueSource(name) === 'cli' ? flags[name] : undefined);
      const config = loadConfig({ databaseUrl: typed('databaseUrl'), dataDir: typed('dataDir') }, process.env, {
        ...(configFile ? { configFiles: configFile } : {}),
        ...(configDir ? { configDirs: configDir } : {}),
        flags: { databaseUrl: '--database-url', dataDir: '--data-dir' },
      });
      // Its answer is on stdout (scripts read `applied: …`); the log goes to stderr.
      const log = createLogger(config, 'cyborg', { toStderr: true });
      if (!config.databaseUrl && !flags.embedded) {
        throw new StartupError(
          "no [database] connection (DATABASE_URL, --database-url) is set: nothing to migrate; for the all-in-one's embedded database under the data directory, run: cyborg db migrate --embedded",
          StartupExit.config,
        );
      }
      if (config.databaseUrl && flags.embedded)
        throw new StartupError(
          `--embedded, but [database] connection (DATABASE_URL) is set to ${redact(config.databaseUrl)}: give one or the other`,
          StartupExit.config,
        );
      const embedded = config.databaseUrl ? null : await startEmbedded(config.dataDir, optionSource(config, 'dataDir'));
      const url = config.databaseUrl ?? embedded!.url;
      const orm = await openOrm({ url, pool: 1 });
      try {
        if (flags.check) {
          const { pending } = await schemaStatus(orm).catch((err: unknown) => {
            throw startupErrorFor(err, `[database] connection (DATABASE_URL) = ${redact(url)}`);
          });
          process.stdout.write(
            pending.length
              ? `not at the code's schema; pending: ${pending.join(', ')} (run: cyborg db migrate, then cyborg db contract)\n`
              : "at the code's schema\n",
          );
          process.exitCode = pending.length ? 1 : 0;
          return;
        }
        const at = `[database] connection (DATABASE_URL) = ${redact(url)}`;
        const create = !embedded && (await databaseMissing(orm, at));
        if (create && !flags.create) {
          throw new StartupError(
            `${at}: database "${databaseName(url)}" does not exist; nothing created (a misspelt name?). To create it: cyborg db migrate --create`,
            StartupExit.schema,
          );
        }
        // Created here, before the plan reads the schema's state (it reads the database it names).
        if (create) await orm.schema.ensureDatabase().catch((err: unknown) => Promise.reject(createErrorFor(err, at, databaseName(url))));
        const applied = await migrate(orm).catch((err: unknown) => {
          // A database this release may not migrate (not the next one, or ahead): one line, its way out.
          if (err instanceof MigrationRefused) throw new StartupError(`cyborg ${RELEASE} db migrate: ${err.message}`, StartupExit.schema);
          throw create ? createErrorFor(err, at, databaseName(url)) : startupErrorFor(err, at);
        });
        const database = embedded ? `embedded:${embedded.dataDir}` : redact(url);
        log.info({ database, created: create, applied }, 'migrations applied');
        if (create) process.stdout.write(`created: database "${databaseName(url)}"\n`);
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')} (${database})\n` : `up to date (${database})\n`);
      } finally {
        await orm.close();
        await embedded?.stop();
      }
    });
  db.command('contract')
    .description("apply this release's contract migrations (drops, renames, constraints): once every role runs this release")
    .addOption(new Option('--database-url <url>', 'PostgreSQL URL').env('DATABASE_URL'))
    .action(async (flags: { databaseUrl?: string }, cmd: Command) => {
      const { configFile, configDir } = cmd.optsWithGlobals<{ configFile?: string[]; configDir?: string[] }>();
      const typed = cmd.getOptionValueSource('databaseUrl') === 'cli' ? flags.databaseUrl : undefined;
      const config = loadConfig({ databaseUrl: typed }, process.env, {
        ...(configFile ? { configFiles: configFile } : {}),
        ...(configDir ? { configDirs: configDir } : {}),
        flags: { databaseUrl: '--database-url' },
      });
      const log = createLogger(config, 'cyborg', { toStderr: true });
      if (!config.databaseUrl)
        throw new StartupError(
          'no [database] connection (DATABASE_URL, --database-url) is set: nothing to contract (the embedded database contracts itself)',
          StartupExit.config,
        );
      // Refused while a role of an older release is alive: a contract drops what it still reads.
      const seen: { older: string[]; blind?: string } = deps.olderRoles ? await deps.olderRoles(config) : { older: [] };
      if (seen.older.length > 0)
        throw new StartupError(
          `cyborg ${RELEASE} db contract: refused while ${seen.older.length} older role(s) run: ${seen.older.slice(0, 5).join('; ')}${seen.older.length > 5 ? '; …' : ''}; upgrade them to ${RELEASE} first (cyborg status upgrade-check lists them)`,
          StartupExit.schema,
        );
      if (seen.blind) throw new StartupError(`cyborg ${RELEASE} db contract: refused: cannot see every role (${seen.blind})`, StartupExit.schema);
      const url = config.databaseUrl;
      const orm = await openOrm({ url, pool: 1 });
      try {
        const applied = await contract(orm).catch((err: unknown) => {
          if (err instanceof MigrationRefused) throw new StartupError(`cyborg ${RELEASE} db contract: ${err.message}`, StartupExit.schema);
          throw startupErrorFor(err, `[database] connection (DATABASE_URL) = ${redact(url)}`);
        });
        log.info({ database: redact(url), applied }, 'contract migrations applied');
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
      } finally {
        await orm.close();
      }
    });
  return db;
}
