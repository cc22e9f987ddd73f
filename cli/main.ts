import { Command, Option } from 'commander';
import { ConfigError, type DeepPartial, StartupError, type ConfigSchema, browserBlocksPort, PORTS } from '../config/index.js';
import type { Static } from '@sinclair/typebox';
import { startAllInOne } from '../roles/all-in-one.js';
import { explainStartupError, listenersOf } from '../roles/startup.js';
import { adoptCommand } from '../adopt/index.js';
import { dbCommand } from '../db/index.js';
import { olderRoles, readRoster } from './roster.js';
import { PROTOCOL, RELEASE, SCHEMA_REVISION } from '../release/index.js';
import { boot, collect } from './boot.js';
import { configCommand } from './config.js';
import { statusCommand } from './status.js';
import { addRoleCommands } from './roles.js';
import { addOperatorCommands } from './commands/index.js';
import { ExitCode, processIo, type Io } from './output.js';

/**
 * `cyborg <role|command>`: one program, a subcommand per role. Flags override the environment,
 * which overrides defaults; the result is validated once, here.
 */
export function buildProgram(io?: Io): Command {
  const program = new Command('cyborg')
    .description('Accelerator manager for OpenStack clouds and GPU / FPGA / SmartNIC fleets')
    .showHelpAfterError()
    .option('--config-file <path>', "an INI config file, as Cyborg's cyborg.conf (repeatable; later files win; env CYBORG_CONFIG_FILE)", collect)
    .option(
      '--config-dir <dir>',
      "a directory of *.conf drop-ins read after the config files, by name (oslo.config's cyborg.conf.d; repeatable; env CYBORG_CONFIG_DIR)",
      collect,
    )
    .version(version(), '-V, --version', 'print the version');

  program
    .command('all-in-one')
    .description('API + conductor + one agent with the fake driver, in one process (what `npm start` runs)')
    .addOption(new Option('--listen <address>', 'address to listen on').env('CYBORG_LISTEN_ADDRESS'))
    .addOption(new Option('--port <port>', `port to listen on (default ${PORTS.allInOne}: browsers refuse Cyborg's 6666)`).env('CYBORG_PORT').argParser(Number))
    .addOption(new Option('--host <name>', "this host's name (compute node name)").env('CYBORG_HOST'))
    .addOption(new Option('--fake-gpus <n>', 'the number of fake GPUs, beside the fake FPGA (default 2)').argParser(Number))
    .addOption(new Option('--fake-nics <n>', 'the number of fake NICs, each with its VFs (default 1)').argParser(Number))
    .action(async (flags: { listen?: string; port?: number; host?: string; fakeGpus?: number; fakeNics?: number }, cmd: Command) => {
      const overrides: DeepPartial<Static<typeof ConfigSchema>> = {
        host: flags.host,
        listen: { address: flags.listen, port: flags.port },
        fake: { gpus: flags.fakeGpus, nics: flags.fakeNics },
      };
      const { config, log } = boot(cmd, 'all-in-one', overrides);
      const running = await startAllInOne(config, log).catch((err: unknown) => {
        throw explainStartupError(err, listenersOf(config));
      });
      log.info({ url: running.url }, 'cyborg all-in-one is up');
      const port = Number(new URL(running.url).port);
      const refused = browserBlocksPort(port) ? `\n  (browsers refuse port ${port}: start with --port ${PORTS.allInOne} to open the visualizer)\n` : '';
      process.stdout.write(
        `\n  cyborg all-in-one is up\n  API:        ${running.url}/cyborg/v1/accelerators\n  Cyborg v2:  ${running.url}/v2\n  Visualizer: ${running.url}/ui\n${refused}\n`,
      );
      onShutdown(async (signal) => {
        log.info({ signal }, 'shutting down');
        await running.stop();
      });
    });

  program.addCommand(
    dbCommand({
      olderRoles: async (config) => {
        const roster = await readRoster(config);
        const older = olderRoles(roster).map((r) => `${r.role} ${r.host} (${r.release}, protocol ${r.protocol})`);
        // Without a bus there is no other process to spare (the blind note is for a fleet).
        return { older, ...(roster.blind && config.natsUrl ? { blind: roster.blind } : {}) };
      },
    }),
  );
  program.addCommand(configCommand());
  program.addCommand(statusCommand());
  program.addCommand(adoptCommand());
  addRoleCommands(program, onShutdown);
  addOperatorCommands(program, io);
  // The program's options only before the subcommand: else `update-driver fake --version 1.1.0`
  // printed the program's version and did nothing. So every subcommand takes the config options.
  program.enablePositionalOptions();
  for (const cmd of program.commands) withConfigOptions(cmd);
  // `cyborg bogus` is bad usage, exit 2 as `cyborg accelerator bogus` is (docs/cli.md), where
  // commander exits 1. Set after the subcommands are added, which copy it when created: the
  // roles keep commander's own exits.
  const out = io ?? processIo;
  program.configureOutput({ writeOut: out.out, writeErr: out.err }).exitOverride((e) => out.usageExit(e.exitCode === 0 ? ExitCode.ok : ExitCode.usage));

  return program;
}

/** `--config-file` / `--config-dir` on a subcommand and its own subcommands (`cyborg db migrate --config-file …`). */
function withConfigOptions(cmd: Command): void {
  if (!cmd.options.some((o) => o.long === '--config-file')) {
    cmd
      .option('--config-file <path>', 'an INI config file (repeatable; later files win; env CYBORG_CONFIG_FILE)', collect)
      .option('--config-dir <dir>', 'a directory of *.conf drop-ins, read after the files (repeatable; env CYBORG_CONFIG_DIR)', collect);
  }
  for (const sub of cmd.commands) withConfigOptions(sub);
}

/** What `cyborg --version` prints: the release, the schema revision it ships and the protocol it speaks and reads (docs/upgrade.md). */
function version(): string {
  return `cyborg ${RELEASE} (schema ${SCHEMA_REVISION}; protocol ${PROTOCOL.current}, reads ${PROTOCOL.previous}–${PROTOCOL.current})`;
}

/**
 * A second signal within this long of the first is the same one delivered twice, not an
 * operator's second Ctrl-C: a stop of the whole process group (systemd's KillMode=control-group,
 * a terminal) reaches node both directly and relayed by a wrapper (npm, tsx) in front of it.
 */
const SAME_SIGNAL_MS = 1_000;

/** Graceful shutdown on SIGINT/SIGTERM; a second signal (not the first one relayed) forces the exit. */
export function onShutdown(stop: (signal: string) => Promise<void>): void {
  let stoppingSince: number | undefined;
  const handler = (signal: string): void => {
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < SAME_SIGNAL_MS) return;
      process.exit(130);
    }
    stoppingSince = Date.now();
    stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/** Runs the program on a command line (cli/bin.js calls it; so does `tsx cli/main.ts`). */
export function main(argv: string[]): void {
  buildProgram()
    .parseAsync(argv)
    .catch((err: unknown) => {
      if (err instanceof ConfigError || err instanceof StartupError) process.stderr.write(`cyborg: ${err.message}\n`);
      else process.stderr.write(`cyborg: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(err instanceof StartupError ? err.exitStatus : 1);
    });
}

// Run directly (`tsx cli/main.ts …`). The bin calls main() itself: npx runs it through a link
// whose path says nothing of cli/bin.js, so it cannot be recognised from argv.
if (import.meta.url === `file://${process.argv[1]}`) main(process.argv);
