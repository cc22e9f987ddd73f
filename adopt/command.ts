import { Command, Option } from 'commander';
import { createLogger, loadConfig, StartupError } from '../config/index.js';
import { AdoptError, AdoptExit } from './errors.js';
import { adopt, refusedVerdict } from './run.js';

/**
 * `cyborg adopt --from <Cyborg's [database] connection> [--dry-run]`: moves a cloud in from
 * OpenStack Cyborg (docs/adopt.md). Writes `[database] connection` (ours, migrated first), never
 * the source. Exit codes: adopt/errors.ts.
 */
export function adoptCommand(): Command {
  return new Command('adopt')
    .description('import an OpenStack Cyborg database (9.0.0 to master): device profiles, inventory, ARQs; read only on the source')
    .addOption(
      new Option('--from <url>', "Cyborg's [database] connection: mysql+pymysql://user:password@host/cyborg or postgresql://…").env('CYBORG_ADOPT_FROM'),
    )
    .option('--dry-run', 'write nothing: print by kind what would be imported and skipped, and the verdict')
    .action(async (flags: { from?: string; dryRun?: boolean }, cmd: Command) => {
      const { configFile, configDir } = cmd.optsWithGlobals<{ configFile?: string[]; configDir?: string[] }>();
      if (!flags.from) throw new AdoptError('--from (CYBORG_ADOPT_FROM) is required: the Cyborg database to adopt', AdoptExit.config);
      const config = loadConfig({}, process.env, { ...(configFile ? { configFiles: configFile } : {}), ...(configDir ? { configDirs: configDir } : {}) });
      if (!config.databaseUrl)
        throw new AdoptError(
          'no [database] connection (DATABASE_URL) is set: adopt writes our PostgreSQL database; run cyborg db migrate on it first',
          AdoptExit.config,
        );
      const log = createLogger(config, 'cyborg', { toStderr: true });
      try {
        const out = await adopt(config, log, { from: flags.from, dryRun: flags.dryRun ?? false });
        process.stdout.write(`${out.lines.join('\n')}\n`);
      } catch (err) {
        // A dry run ends with its verdict whatever stops it; the one line is on stderr too.
        if (flags.dryRun && err instanceof StartupError) process.stdout.write(`${refusedVerdict(err as AdoptError)}\n`);
        throw err;
      }
    });
}
