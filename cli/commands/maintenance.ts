import type { Command } from 'commander';
import { table, UsageError, withProgress, type Io } from '../output.js';
import { resolveAccelerator } from './accelerators.js';
import { act, apiCommand, group, printJson, type Ctx } from './common.js';
import type { AcceleratorView } from '../../model/index.js';

const accPath = (id: string): string => `/accelerators/${encodeURIComponent(id)}`;
const drainPath = (host: string): string => `/hosts/${encodeURIComponent(host)}/drain`;

interface DrainView {
  host: string;
  state: 'draining' | 'drained' | 'none';
  accelerators: AcceleratorView[];
}

/** What a mark means now: draining (with who is left), maintenance, or in service. */
function markOf(a: AcceleratorView): string {
  const m = a.maintenance;
  if (!m) return 'in service';
  const who = m.consumers.map((c) => c.instanceUuid).join(', ');
  return m.mark === 'draining' ? `draining (${m.consumers.length} consumer(s) left: ${who})` : 'maintenance (no consumer left)';
}

function healthOf(a: AcceleratorView): string {
  const h = a.health;
  if (!h || h.status === 'ok') return 'ok';
  return `${h.status}${h.fatal ? ' (fatal)' : ''}${h.reason ? `: ${h.reason}` : ''}`;
}

async function onAccelerator(
  ctx: Ctx,
  ref: string,
  verb: string,
  call: (path: string) => Promise<AcceleratorView>,
  say: (a: AcceleratorView) => string,
): Promise<void> {
  const id = await resolveAccelerator(ctx, ref);
  const a = await withProgress(ctx.io, ctx.json, `${verb} ${ref}`, call(accPath(id)));
  if (ctx.json) return printJson(ctx, a);
  ctx.io.out(`${a.name}: ${say(a)}\n`);
}

/**
 * `cyborg accelerator maintenance <accelerator> [--cancel]`, `accelerator reset|clear-health`,
 * and `cyborg host drain <host> [--cancel]` (api/routes/maintenance.ts).
 */
export function addMaintenanceCommands(program: Command, io: Io): void {
  const acc = program.commands.find((c) => c.name() === 'accelerator') ?? group(program, 'accelerator', 'Accelerators', io);

  act<{ cancel?: boolean }>(
    apiCommand(
      acc,
      'maintenance <accelerator>',
      'Mark for maintenance: no new binds, reserved in Placement, instances keep running (--cancel: back in service)',
      io,
    ).option('--cancel', "cancel the device's own mark"),
    io,
    (ctx, [ref], o) =>
      onAccelerator(
        ctx,
        ref!,
        o.cancel ? 'cancelling maintenance of' : 'marking',
        (p) => (o.cancel ? ctx.api.delete(`${p}/maintenance`) : ctx.api.post(`${p}/maintenance`)),
        markOf,
      ),
  );

  act(apiCommand(acc, 'reset <accelerator>', 'Reset the device through its driver and clear its health (never while attached)', io), io, (ctx, [ref]) =>
    onAccelerator(
      ctx,
      ref!,
      'resetting',
      (p) => ctx.api.post(`${p}/reset`),
      (a) => `${a.state}, health ${healthOf(a)}`,
    ),
  );

  act(apiCommand(acc, 'clear-health <accelerator>', 'Forget a health fault (a fatal one included) and return the device to service', io), io, (ctx, [ref]) =>
    onAccelerator(
      ctx,
      ref!,
      'clearing health of',
      (p) => ctx.api.post(`${p}/clear-health`),
      (a) => `health ${healthOf(a)}`,
    ),
  );

  const host = program.commands.find((c) => c.name() === 'host') ?? group(program, 'host', 'Compute hosts', io);
  act<{ cancel?: boolean }>(
    apiCommand(host, 'drain <host>', "Drain a host: mark every device of it for maintenance (--cancel: end the drain; devices' own marks stay)", io).option(
      '--cancel',
      'cancel the drain',
    ),
    io,
    async (ctx, [name], o) => {
      const call = o.cancel ? ctx.api.delete<DrainView>(drainPath(name!)) : ctx.api.post<DrainView>(drainPath(name!));
      const d = await withProgress(io, ctx.json, `${o.cancel ? 'cancelling the drain of' : 'draining'} ${name}`, call);
      if (ctx.json) return printJson(ctx, d);
      io.out(`host ${d.host}: ${o.cancel ? 'drain cancelled' : d.state}\n`);
      io.out(
        table(
          ['ACCELERATOR', 'STATE', 'HEALTH', 'MARK'],
          d.accelerators.map((a) => [a.name, a.state, healthOf(a), markOf(a)]),
        ),
      );
    },
  );

  // Re-lay out one card (api/routes/layout.ts): its MIG instances or its VF count.
  act<{ mig?: string; vfs?: string }>(
    apiCommand(
      host,
      'layout <host> <address>',
      'Re-lay out a card: --mig 1g.20gb,1g.20gb,… (MIG instances) or --vfs N (SR-IOV VFs); refused while any of its devices is allocated',
      io,
    )
      .option('--mig <profiles>', 'MIG profiles, comma-separated, in the order to create them')
      .option('--vfs <count>', 'the VF count of the physical function'),
    io,
    async (ctx, [name, address], o) => {
      // A UsageError, not an Error: an operator's slip is exit 2 (docs/cli.md), not an unexpected failure.
      if ((o.mig === undefined) === (o.vfs === undefined)) throw new UsageError('give exactly one of --mig <profiles> or --vfs <count>');
      const body =
        o.mig !== undefined
          ? {
              kind: 'mig',
              address: address!,
              profiles: o.mig
                .split(',')
                .map((p) => p.trim())
                .filter(Boolean),
            }
          : { kind: 'vfs', address: address!, count: Number(o.vfs) };
      const r = await withProgress(
        io,
        ctx.json,
        `re-laying out ${address} on ${name}`,
        ctx.api.post<{ accelerators: AcceleratorView[] }>(`/hosts/${encodeURIComponent(name!)}/layout`, body),
      );
      if (ctx.json) return printJson(ctx, r);
      io.out(
        table(
          ['ACCELERATOR', 'STATE', 'RESOURCE CLASS', 'TRAITS'],
          r.accelerators.map((a) => [a.name, a.state, a.resourceClass ?? '', a.traits.join(' ')]),
        ),
      );
    },
  );
}
