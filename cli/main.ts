import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type DeepPartial } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import type { Static } from '@sinclair/typebox';
import type { ConfigSchema } from '../config/index.js';
import { startAllInOne } from '../roles/all-in-one.js';
import { dbCommand } from '../db/cli.js';
import { addRoleCommands } from './roles.js';
import { addOperatorCommands } from './commands/index.js';

/**
 * `cyborg <role|command>`: one program, a subcommand per role. Flags override the environment,
 * which overrides defaults; the result is validated once, here.
 */
export function buildProgram(): Command {
  const program = new Command('cyborg')
    .description('Accelerator manager for OpenStack clouds and GPU / FPGA / SmartNIC fleets')
    .showHelpAfterError();

  program.command('all-in-one')
    .description('API + conductor + one agent with the fake driver, in one process (what `npm start` runs)')
    .addOption(new Option('--listen <address>', 'address to listen on').env('CYBORG_LISTEN_ADDRESS'))
    .addOption(new Option('--port <port>', 'port to listen on (Cyborg\'s default is 6666)').env('CYBORG_PORT').argParser(Number))
    .addOption(new Option('--host <name>', 'this host\'s name (compute node name)').env('CYBORG_HOST'))
    .addOption(new Option('--fake-gpus <n>', 'extra fake GPUs').argParser(Number))
    .addOption(new Option('--fake-nics <n>', 'extra fake NICs with VFs').argParser(Number))
    .action(async (flags: { listen?: string; port?: number; host?: string; fakeGpus?: number; fakeNics?: number }) => {
      const overrides: DeepPartial<Static<typeof ConfigSchema>> = {
        host: flags.host,
        listen: { address: flags.listen, port: flags.port },
        fake: { gpus: flags.fakeGpus, nics: flags.fakeNics },
      };
      const config = loadConfig(overrides);
      const log = createLogger(config);
      const running = await startAllInOne(config, log);
      log.info({ url: running.url }, 'cyborg all-in-one is up');
      process.stdout.write(`\n  cyborg all-in-one is up\n  API:        ${running.url}/cyborg/v1/accelerators\n  Cyborg v2:  ${running.url}/v2\n  Visualizer: ${running.url}/ui\n\n`);
      onShutdown(async (signal) => {
        log.info({ signal }, 'shutting down');
        await running.stop();
      });
    });

  program.addCommand(dbCommand());
  addRoleCommands(program, onShutdown);
  addOperatorCommands(program);

  return program;
}

/** Graceful shutdown on SIGINT/SIGTERM; a second signal forces the exit. */
export function onShutdown(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string): void => {
    if (stopping) process.exit(130);
    stopping = true;
    stop(signal).then(() => process.exit(0), (err: unknown) => {
      process.stderr.write(`shutdown failed: ${String(err)}\n`);
      process.exit(1);
    });
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/** Runs the program on a command line (cli/bin.js calls it; so does `tsx cli/main.ts`). */
export function main(argv: string[]): void {
  buildProgram().parseAsync(argv).catch((err: unknown) => {
    if (err instanceof ConfigError) process.stderr.write(`cyborg: ${err.message}\n`);
    else process.stderr.write(`cyborg: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}

// Run directly (`tsx cli/main.ts …`). The bin calls main() itself: npx runs it through a link
// whose path says nothing of cli/bin.js, so it cannot be recognised from argv.
if (import.meta.url === `file://${process.argv[1]}`) main(process.argv);
