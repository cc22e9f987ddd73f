import type { Command } from 'commander';
import { ExitCode, table, withProgress, type Io } from '../output.js';
import { act, apiCommand, printJson } from './common.js';
import type { DiscoverResult, ServiceView } from '../../model/index.js';

function serviceRows(services: ServiceView[]): string {
  return table(
    ['HOST', 'DRIVER', 'DEVICE', 'KIND', 'NAME', 'AVAILABLE', 'DETAILS'],
    services.map((s) => [
      s.host,
      s.driver,
      s.address,
      s.kind,
      s.name,
      s.available === undefined ? '' : `${s.available}${s.total === undefined ? '' : `/${s.total}`}`,
      Object.entries(s.details)
        .filter(([k, v]) => v !== '' && k !== 'description')
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    ]),
  );
}

/** service-list and discover-services (the generic-driver spec). */
export function addServiceCommands(program: Command, io: Io): void {
  act<{ host?: string; driver?: string }>(
    apiCommand(program, 'service-list', 'List the services of each backend (VFs, mdev types, programmed functions), as last discovered', io)
      .option('--host <host>', 'only this host')
      .option('--driver <name>', 'only this driver'),
    io,
    async (ctx, _args, o) => {
      const services = await ctx.api.list<ServiceView>('/services', 'services', { host: o.host, driver: o.driver });
      if (ctx.json) printJson(ctx, services);
      else io.out(services.length ? serviceRows(services) : 'No services recorded. Run "cyborg discover-services" first.\n');
    },
  );

  act<{ host?: string }>(
    apiCommand(program, 'discover-services', 'Ask the agents for the services of their backends now, and record them', io).option(
      '--host <host>',
      'only this host (default: every online host)',
    ),
    io,
    async (ctx, _args, o) => {
      const r = await withProgress(io, ctx.json, 'discovering services', ctx.api.post<DiscoverResult>('/services/discover', { host: o.host }));
      if (r.failures.length > 0) ctx.exitCode = ExitCode.driverFailed;
      if (ctx.json) return printJson(ctx, r);
      const hosts = new Set(r.services.map((s) => s.host)).size;
      io.out(`${r.services.length} service(s) on ${hosts} host(s)\n`);
      if (r.services.length) io.out(serviceRows(r.services));
      for (const f of r.failures) io.err(`cyborg: ${f.host}${f.driver ? `/${f.driver}` : ''}: ${f.reason} [${f.code}]\n`);
    },
  );
}
