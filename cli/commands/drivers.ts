import type { Command } from 'commander';
import { table, withProgress, type Io } from '../output.js';
import { act, apiCommand, printJson, type Ctx } from './common.js';
import type { DriverView } from '../../model/index.js';

interface Target {
  host?: string;
  version?: string;
  force?: boolean;
}

function driverRows(drivers: DriverView[]): string {
  return table(
    ['DRIVER', 'HOST', 'VERSION', 'STATE', 'ACCELERATORS', 'IN USE', 'AGENT', 'ID', 'LAST ERROR'],
    drivers.map((d) => [
      d.name,
      d.host,
      d.version,
      d.state,
      d.accelerators,
      d.inUse,
      d.loaded ? d.hostState : `${d.hostState}, not loaded`,
      d.id,
      d.lastError ? `${d.lastError.op}: ${d.lastError.reason}` : '',
    ]),
  );
}

const path = (ref: string): string => `/drivers/${encodeURIComponent(ref)}`;

/** One lifecycle command: POST, progress while the agent works, one line (or JSON) after. */
function lifecycle(parent: Command, io: Io, op: 'install' | 'uninstall' | 'update', description: string, done: (d: DriverView) => string): void {
  const cmd = apiCommand(parent, `${op}-driver <driver_id>`, description, io).option(
    '--host <host>',
    'the host, when the driver runs on several (or name it driver@host)',
  );
  if (op !== 'uninstall')
    cmd.option(
      '--version <version>',
      op === 'install' ? 'version to install (default: what the agent ships)' : 'version to update to (default: what the agent ships)',
    );
  if (op === 'update') cmd.option('--force', 'update even though the host is not drained (cyborg host drain <host>)');
  act<Target>(cmd, io, async (ctx: Ctx, [ref], o) => {
    const body = { host: o.host, ...(op !== 'uninstall' ? { version: o.version } : {}), ...(op === 'update' && o.force ? { force: true } : {}) };
    const d = await withProgress(
      io,
      ctx.json,
      `${op === 'update' ? 'updating' : `${op}ing`} driver ${ref}`,
      ctx.api.post<DriverView>(`${path(ref!)}/${op}`, body),
    );
    if (ctx.json) printJson(ctx, d);
    else io.out(`${done(d)}\n`);
  });
}

/** driver-list, install-driver, uninstall-driver, update-driver (the generic-driver spec). */
export function addDriverCommands(program: Command, io: Io): void {
  act<{ host?: string }>(
    apiCommand(program, 'driver-list', 'List the drivers (backends) of every host, with their state and version', io).option('--host <host>', 'only this host'),
    io,
    async (ctx, _args, o) => {
      const drivers = await ctx.api.list<DriverView>('/drivers', 'drivers', { host: o.host });
      if (ctx.json) printJson(ctx, drivers);
      else io.out(drivers.length ? driverRows(drivers) : 'No drivers: no agent has registered yet.\n');
    },
  );

  lifecycle(
    program,
    io,
    'install',
    'Install a driver on its host; its accelerators are discovered',
    (d) => `driver ${d.name}@${d.host} installed, version ${d.version}, ${d.accelerators} accelerator(s)`,
  );
  lifecycle(
    program,
    io,
    'uninstall',
    'Uninstall a driver from its host (refused while an instance holds one of its accelerators)',
    (d) => `driver ${d.name}@${d.host} uninstalled; its accelerators are gone from the host's inventory`,
  );
  lifecycle(
    program,
    io,
    'update',
    'Update a driver on its host (only a drained one, or with --force)',
    (d) => `driver ${d.name}@${d.host} updated to version ${d.version}`,
  );
}
