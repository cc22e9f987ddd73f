import type { Command } from 'commander';
import { table, withProgress, type Io } from '../output.js';
import { act, apiCommand, printJson } from './common.js';
import type { Capacity, CapacityCounts } from '../../model/index.js';

const HEAD = ['RESOURCE CLASS', 'DEVICES', 'TOTAL', 'USED', 'RESERVED', 'QUARANTINED', 'MAINTENANCE', 'FREE'];
const cells = (c: CapacityCounts): string[] => [
  c.resourceClass,
  String(c.accelerators),
  String(c.total),
  String(c.used),
  String(c.reserved),
  String(c.quarantined),
  String(c.maintenance),
  String(c.free),
];

/**
 * `cyborg capacity [--resource-class RC] [--trait T] [--host h] [--by-host | --by-trait]`: free
 * capacity as Placement counts it (api/routes/capacity.ts): the fleet by resource class, or one
 * row per host or per trait.
 */
export function addCapacityCommands(program: Command, io: Io): void {
  act<{ resourceClass?: string; trait?: string; host?: string; byHost?: boolean; byTrait?: boolean }>(
    apiCommand(
      program,
      'capacity',
      'Capacity by resource class: total, used, reserved (of which quarantined, maintenance), free — fleet-wide, --by-host or --by-trait',
      io,
    )
      .option('--resource-class <rc>', 'only this resource class (PGPU, FPGA, CUSTOM_…)')
      .option('--trait <trait>', 'only accelerators reporting this trait')
      .option('--host <host>', 'only this host')
      .option('--by-host', 'one row per host and resource class')
      .option('--by-trait', 'one row per trait and resource class'),
    io,
    async (ctx, _args, o) => {
      const c = await withProgress(
        io,
        ctx.json,
        'reading capacity',
        ctx.api.get<Capacity>('/capacity', { resourceClass: o.resourceClass, trait: o.trait, host: o.host }),
      );
      if (ctx.json) return printJson(ctx, c);
      if (o.byHost)
        io.out(
          table(
            ['HOST', ...HEAD],
            c.hosts.flatMap((h) => h.classes.map((x) => [h.host, ...cells(x)])),
          ),
        );
      else if (o.byTrait)
        io.out(
          table(
            ['TRAIT', ...HEAD],
            c.traits.map((t) => [t.trait, ...cells(t)]),
          ),
        );
      else io.out(table(HEAD, c.fleet.map(cells)));
    },
  );
}
