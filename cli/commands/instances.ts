import type { Command } from 'commander';
import { UsageError, withProgress, type Io } from '../output.js';
import { resolveAccelerator } from './accelerators.js';
import { act, apiCommand, printJson } from './common.js';
import type { AcceleratorView, ArqView } from '../../model/index.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Nova names instances by UUID; anything else is a typo worth saying so. */
function instanceId(id: string): string {
  if (!UUID.test(id)) throw new UsageError(`instance ids are UUIDs (as "openstack server list" shows them), got "${id}"`);
  return id;
}

interface AttachFlags {
  accelerator?: string;
  resourceClass?: string;
  trait?: string[];
  deviceProfile?: string;
  host?: string;
  project?: string;
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

/** attach-instance and detach-instance (the generic-driver spec), routed API → conductor → ARQ. */
export function addInstanceCommands(program: Command, io: Io): void {
  const attach = apiCommand(program, 'attach-instance <instance_id>', 'Attach an accelerator to an instance: Cyborg binds an ARQ for it, as for Nova', io)
    .option('--accelerator <accelerator>', 'this accelerator (id or name)')
    .option('--resource-class <rc>', 'the first free accelerator of this resource class (PGPU, VGPU, FPGA, CUSTOM_NIC, …)')
    .option('--trait <trait>', 'required trait (repeatable)', collect)
    .option('--device-profile <name>', 'an accelerator matching this device profile (and the ARQ names it)')
    .option('--host <host>', 'only accelerators of this host')
    .option('--project <id>', 'project the ARQ belongs to');
  act<AttachFlags>(attach, io, async (ctx, [instance], o) => {
    if (!o.accelerator && !o.resourceClass && !o.deviceProfile) {
      throw new UsageError('say which accelerator: --accelerator <id>, --resource-class <rc> or --device-profile <name> (see: cyborg accelerator list)');
    }
    instanceId(instance!);
    const body = {
      acceleratorId: o.accelerator ? await resolveAccelerator(ctx, o.accelerator) : undefined,
      resourceClass: o.resourceClass?.toUpperCase(),
      traits: o.trait,
      deviceProfileName: o.deviceProfile,
      host: o.host,
      projectId: o.project,
    };
    const r = await withProgress(
      io,
      ctx.json,
      `attaching instance ${instance}`,
      ctx.api.post<{ arq: ArqView; accelerator: AcceleratorView }>(`/instances/${encodeURIComponent(instance!)}/attach`, body),
    );
    if (ctx.json) return printJson(ctx, r);
    const alloc = r.accelerator.allocations.find((a) => a.arqUuid === r.arq.uuid);
    io.out(
      `instance ${instance} attached to ${r.accelerator.name} (${r.accelerator.id}) on ${r.accelerator.host}\n` +
        `  ARQ ${r.arq.uuid}: ${r.arq.cyborgState}${alloc ? `, attach handle ${alloc.handleUuid}` : ''}\n`,
    );
  });

  act(
    apiCommand(program, 'detach-instance <instance_id>', 'Detach every accelerator an instance holds (its ARQs are unbound and deleted)', io),
    io,
    async (ctx, [instance]) => {
      instanceId(instance!);
      const r = await withProgress(
        io,
        ctx.json,
        `detaching instance ${instance}`,
        ctx.api.post<{ instanceUuid: string; arqs: string[]; accelerators: AcceleratorView[] }>(`/instances/${encodeURIComponent(instance!)}/detach`),
      );
      if (ctx.json) return printJson(ctx, r);
      if (r.accelerators.length === 0 && r.arqs.length === 0) return io.out(`instance ${instance} holds no accelerator: nothing to detach\n`);
      io.out(
        `instance ${instance} detached from ${r.accelerators.map((a) => `${a.name} (now ${a.state})`).join(', ') || 'its accelerators'}; ${r.arqs.length} ARQ(s) deleted\n`,
      );
    },
  );
}
