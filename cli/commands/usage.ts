import type { Command } from 'commander';
import { table, UsageError, type Io } from '../output.js';
import { act, apiCommand, printJson } from './common.js';
import { resolveAccelerator } from './accelerators.js';
import type { AcceleratorUsage, AcceleratorView, HostUsage, UsageSample } from '../../model/index.js';

/** What the API answers at GET /cyborg/v1/projects (api/routes/usage.ts). */
interface ProjectSummary {
  projectId: string;
  projectName?: string;
  accelerators: number;
  allocations: number;
  instances: string[];
  byDeviceType: Record<string, number>;
  byResourceClass: Record<string, number>;
}

const NONE = 'No usage samples yet (agents send them every [agent] telemetry_interval_ms; [conductor] usage_window = 0 keeps none).';

const cell = (x: number | undefined, digits = 0): string => (x === undefined ? '' : x.toFixed(digits));
const memory = (s: UsageSample | undefined): string =>
  s?.memoryUsedMiB === undefined ? '' : `${cell(s.memoryUsedMiB)}${s.memoryTotalMiB === undefined ? '' : ` / ${cell(s.memoryTotalMiB)}`} MiB`;
const mean = (xs: (number | undefined)[]): number | undefined => {
  const known = xs.filter((x): x is number => x !== undefined);
  return known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
};
const counts = (c: Record<string, number>): string =>
  Object.entries(c)
    .map(([k, n]) => `${k}=${n}`)
    .join(' ');

function samples(u: AcceleratorUsage, name: string): string {
  if (u.samples.length === 0) return `${name} on ${u.host}: ${NONE}\n`;
  return table(
    ['AT', 'UTIL %', 'MEMORY', 'TEMP °C', 'POWER W'],
    u.samples.map((s) => [s.at, cell(s.utilization, 1), memory(s), cell(s.temperatureC, 1), cell(s.powerW, 1)]),
  );
}

function devices(u: HostUsage, accs: AcceleratorView[]): string {
  if (u.devices.length === 0) return `${u.host}: ${NONE}\n`;
  const byId = new Map(accs.map((a) => [a.id, a]));
  return table(
    ['ACCELERATOR', 'TYPE', 'STATE', 'IN USE', 'SAMPLES', 'UTIL % NOW', 'UTIL % MEAN', 'MEMORY', 'TEMP °C', 'POWER W', 'LATEST'],
    u.devices.map((d) => {
      const a = byId.get(d.accelerator);
      const last = d.samples.at(-1);
      return [
        a?.name ?? d.accelerator,
        a?.deviceType ?? '',
        a?.state ?? '',
        a ? `${a.allocations.length}/${a.capacity}` : '',
        d.samples.length,
        cell(last?.utilization, 1),
        cell(mean(d.samples.map((s) => s.utilization)), 1),
        memory(last),
        cell(last?.temperatureC, 1),
        cell(last?.powerW, 1),
        last?.at ?? '',
      ];
    }),
  );
}

/**
 * `cyborg usage` (an accelerator's recent samples, or a host's devices at a glance, from the
 * conductor's in-memory window) and `cyborg projects` (what each project's instances hold).
 */
export function addUsageCommands(program: Command, io: Io): void {
  act<{ host?: string }>(
    apiCommand(
      program,
      'usage [accelerator]',
      'Show recent usage (utilisation, memory, temperature, power) of an accelerator (id or name), or of every device of a host (--host)',
      io,
    ).option('--host <host>', 'every accelerator of this host that reported usage, one row each'),
    io,
    async (ctx, [ref], o) => {
      if ((ref === undefined) === (o.host === undefined)) throw new UsageError('name an accelerator (id or name) or --host <host>, not both');
      if (o.host !== undefined) {
        const u = await ctx.api.get<HostUsage>(`/hosts/${encodeURIComponent(o.host)}/usage`);
        if (ctx.json) return printJson(ctx, u);
        const accs = await ctx.api.list<AcceleratorView>('/accelerators', 'accelerators', { host: o.host });
        return io.out(devices(u, accs));
      }
      const id = await resolveAccelerator(ctx, ref!);
      const u = await ctx.api.get<AcceleratorUsage>(`/accelerators/${encodeURIComponent(id)}/usage`);
      if (ctx.json) return printJson(ctx, u);
      io.out(samples(u, ref!));
    },
  );

  act<{ project?: string }>(
    apiCommand(program, 'projects', 'Show what each project holds: accelerators allocated to its instances, by device type and resource class', io).option(
      '--project <project>',
      'only this project: a name or an id',
    ),
    io,
    async (ctx, _args, o) => {
      const { projects } = await ctx.api.get<{ projects: ProjectSummary[] }>('/projects');
      const shown = o.project === undefined ? projects : projects.filter((p) => p.projectId === o.project || p.projectName === o.project);
      if (ctx.json) return printJson(ctx, shown);
      if (shown.length === 0) return io.out(o.project === undefined ? 'No project holds an accelerator.\n' : `Project ${o.project} holds no accelerator.\n`);
      io.out(
        table(
          ['PROJECT', 'ACCELERATORS', 'ALLOCATIONS', 'INSTANCES', 'BY TYPE', 'BY RESOURCE CLASS'],
          shown.map((p) => [
            p.projectId ? (p.projectName ? `${p.projectName} (${p.projectId})` : p.projectId) : '(none)',
            p.accelerators,
            p.allocations,
            p.instances.length,
            counts(p.byDeviceType),
            counts(p.byResourceClass),
          ]),
        ),
      );
    },
  );
}
