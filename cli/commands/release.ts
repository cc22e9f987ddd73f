import type { Command } from 'commander';
import { table, withProgress, type Io } from '../output.js';
import { resolveAccelerator } from './accelerators.js';
import { act, apiCommand, group, printJson } from './common.js';
import type { AcceleratorView, HostView } from '../../model/index.js';

/**
 * `cyborg accelerator release <a> --instance uuid` (api/routes/release.ts) and
 * `cyborg host list | show <host> | delete <host>` (api/routes/hosts.ts, host-delete.ts): the ends of a card's and a host's life.
 */
export function addLifecycleCommands(program: Command, io: Io): void {
  const acc = program.commands.find((c) => c.name() === 'accelerator') ?? group(program, 'accelerator', 'Accelerators', io);
  act<{ instance: string }>(
    apiCommand(
      acc,
      'release <accelerator>',
      'Let an instance go from a card whose detach failed, without the driver (the card stays in error; remove it once nothing holds it)',
      io,
    ).requiredOption('--instance <uuid>', 'the instance to release'),
    io,
    async (ctx, [ref], o) => {
      const id = await resolveAccelerator(ctx, ref!);
      const a = await withProgress(
        ctx.io,
        ctx.json,
        `releasing ${o.instance} from ${ref}`,
        ctx.api.post<AcceleratorView>(`/accelerators/${encodeURIComponent(id)}/release`, { instanceUuid: o.instance }),
      );
      if (ctx.json) return printJson(ctx, a);
      ctx.io.out(
        `${a.name}: ${o.instance} released; ${a.state}${a.error ? ` (${a.error.op}: ${a.error.reason})` : ''}, ${a.allocations.length} instance(s) left\n`,
      );
    },
  );

  const host = program.commands.find((c) => c.name() === 'host') ?? group(program, 'host', 'Compute hosts', io);
  act(apiCommand(host, 'list', 'List compute hosts: agent liveness, accelerators, last heartbeat', io), io, async (ctx) => {
    const r = await withProgress(ctx.io, ctx.json, 'listing hosts', ctx.api.get<{ hosts: HostView[] }>('/hosts', { limit: '1000' }));
    if (ctx.json) return printJson(ctx, r.hosts);
    ctx.io.out(
      table(
        ['HOST', 'STATE', 'ACCELERATORS', 'DRIVERS', 'LAST HEARTBEAT'],
        r.hosts.map((h) => [h.name, h.state, String(h.accelerators), h.drivers.map((d) => `${d.name}@${d.version}`).join(' '), h.lastHeartbeatAt ?? '']),
      ),
    );
  });
  act(
    apiCommand(
      host,
      'delete <host>',
      'Delete a host gone for good (lost, holding no instance): its accelerators removed with their Placement providers, its records forgotten',
      io,
    ),
    io,
    async (ctx, [name]) => {
      const r = await withProgress(
        ctx.io,
        ctx.json,
        `deleting ${name}`,
        ctx.api.delete<{ host: string; accelerators: string[] }>(`/hosts/${encodeURIComponent(name!)}`),
      );
      if (ctx.json) return printJson(ctx, r);
      ctx.io.out(`host ${r.host} deleted; ${r.accelerators.length} accelerator(s) removed\n`);
    },
  );
  act(apiCommand(host, 'show <host>', 'One compute host: its agent, drivers and accelerators', io), io, async (ctx, [name]) => {
    const h = await withProgress(ctx.io, ctx.json, `reading ${name}`, ctx.api.get<HostView>(`/hosts/${encodeURIComponent(name!)}`));
    const accs = await ctx.api.get<{ accelerators: AcceleratorView[] }>('/accelerators', { host: name, limit: '1000' });
    if (ctx.json) return printJson(ctx, { ...h, devices: accs.accelerators });
    ctx.io.out(`host ${h.name}: ${h.state}; agent ${h.agentId ?? '(none)'}, epoch ${h.epoch}; last heartbeat ${h.lastHeartbeatAt ?? 'never'}\n`);
    ctx.io.out(`drivers: ${h.drivers.map((d) => `${d.name}@${d.version}`).join(', ') || 'none'}\n`);
    ctx.io.out(
      table(
        ['ACCELERATOR', 'TYPE', 'STATE', 'HEALTH', 'INSTANCES'],
        accs.accelerators.map((a) => [a.name, a.deviceType, a.state, a.health?.status ?? 'ok', a.allocations.map((x) => x.instanceUuid).join(' ')]),
      ),
    );
  });
}
