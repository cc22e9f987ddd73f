import { Command, Option } from 'commander';
import type { Logger } from 'pino';
import type { Config, DeepPartial, ConfigSchema, Role } from '../config/index.js';
import type { Static } from '@sinclair/typebox';
import { boot } from './boot.js';
import { explainStartupError, listenersOf } from '../roles/startup.js';

interface RoleFlags {
  nats?: string;
  database?: string;
  host?: string;
  prefix?: string;
  listen?: string;
  port?: number;
  metricsPort?: number;
  dataDir?: string;
  conductorId?: string;
  leaseTtlMs?: number;
  /** `--no-leases` sets false; commander's default true means "not given". */
  leases?: boolean;
  fakeGpus?: number;
  fakeNics?: number;
}

/** The distributed roles: `cyborg agent`, `cyborg conductor`, `cyborg api` (see docs/distributed.md). */
export function addRoleCommands(program: Command, onShutdown: (stop: (signal: string) => Promise<void>) => void): void {
  const role = (name: Role, description: string, start: (config: Config, log: Logger) => Promise<{ stop(): Promise<void> }>): Command => {
    const cmd = program
      .command(name)
      .description(description)
      .option('--nats <url>', 'NATS server(s), comma-separated (env NATS_URL)')
      .option('--prefix <token>', 'subject prefix, to run several deployments on one NATS (env CYBORG_SUBJECT_PREFIX)')
      .option('--host <name>', "this host's name (env CYBORG_HOST; default: the machine's)")
      .option('--listen <address>', 'address of the HTTP listener (env CYBORG_LISTEN_ADDRESS)')
      .option('--data-dir <dir>', 'local state (the agent cache) (env CYBORG_DATA_DIR)');
    cmd.action(async (flags: RoleFlags, command: Command) => {
      const overrides: DeepPartial<Static<typeof ConfigSchema>> = {
        natsUrl: flags.nats,
        databaseUrl: flags.database,
        host: flags.host,
        dataDir: flags.dataDir,
        listen: { address: flags.listen, port: flags.port },
        distributed: {
          subjectPrefix: flags.prefix,
          metricsPort: flags.metricsPort,
          conductorId: flags.conductorId,
          leaseTtlMs: flags.leaseTtlMs,
          leases: flags.leases === false ? false : undefined,
        },
        fake: { gpus: flags.fakeGpus, nics: flags.fakeNics },
      };
      const { config, log } = boot(command, name, overrides);
      const running = await start(config, log).catch((err: unknown) => {
        throw explainStartupError(err, listenersOf(config));
      });
      onShutdown(async (signal) => {
        log.info({ signal }, 'shutting down');
        await running.stop();
      });
    });
    return cmd;
  };
  const metricsPort = (): Option =>
    new Option('--metrics-port <port>', 'health + /metrics listener; 0 any free port, -1 off (env CYBORG_METRICS_PORT)').argParser(Number);

  role('agent', 'The agent of one compute host: drivers, discovery, heartbeats, driver operations on command', async (c, l) => {
    // Each role's code is imported when its subcommand runs: the all-in-one (cli/main.ts) never
    // loads the NATS client, JetStream KV and leases these roles use (issue 43, 256 MB).
    const { startAgentRole } = await import('../roles/agent.js');
    const r = await startAgentRole(c, l);
    void r.ready;
    return r;
  })
    .addOption(metricsPort())
    .addOption(new Option('--fake-gpus <n>', 'the number of fake GPUs, beside the fake FPGA (fake driver; default 2)').argParser(Number))
    .addOption(new Option('--fake-nics <n>', 'the number of fake NICs, each with its VFs (fake driver; default 1)').argParser(Number));
  role('conductor', 'The actor tree and all state; several share the hosts through leases in JetStream KV', async (c, l) =>
    (await import('../roles/conductor.js')).startConductor(c, l),
  )
    .addOption(metricsPort())
    .option('--database <url>', 'PostgreSQL (env DATABASE_URL); without it state is kept in memory only')
    .option('--conductor-id <id>', 'lease identity (env CYBORG_CONDUCTOR_ID; default: host name + random suffix)')
    .addOption(new Option('--lease-ttl-ms <ms>', 'how long a dead conductor keeps its hosts (env CYBORG_LEASE_TTL_MS)').argParser(Number))
    .option('--no-leases', 'a single conductor owns every host (no JetStream needed)');
  role('api', 'The HTTP API (operator routes, Cyborg v2, events, /metrics), talking to the conductors over NATS', async (c, l) =>
    (await import('../roles/api.js')).startApiRole(c, l),
  ).addOption(
    new Option('--port <port>', "HTTP port (env CYBORG_PORT; default Cyborg's 6666, where Nova and the Keystone catalog expect it)").argParser(Number),
  );
}
