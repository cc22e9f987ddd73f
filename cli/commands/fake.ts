import type { Command } from 'commander';
import { UsageError, withProgress, type Io } from '../output.js';
import { resolveAccelerator } from './accelerators.js';
import { act, apiCommand, group, printJson } from './common.js';

const FAULTS = ['transient', 'fatal', 'flapping', 'clear'];

interface Injected {
  accelerator: string;
  host: string;
  fault: string;
  reason: string;
  note: string;
}

/**
 * `cyborg fake fault <accelerator> transient|fatal|flapping|clear [--reason …]`: a scripted
 * health fault on a fake driver's device (api/routes/fake-faults.ts), for demos and rehearsals of
 * a quarantine. The route exists only on an all-in-one whose fake driver is enabled.
 */
export function addFakeCommands(program: Command, io: Io): void {
  const fake = group(program, 'fake', 'The fake driver: faults for demos and rehearsals (all-in-one with fake_driver only)', io);
  act<{ reason?: string }>(
    apiCommand(fake, 'fault <accelerator> <fault>', `Inject a health fault on a fake device: ${FAULTS.join(' | ')}`, io).option(
      '--reason <text>',
      'what the driver says, e.g. "Xid 79: GPU has fallen off the bus"',
    ),
    io,
    async (ctx, [ref, fault], o) => {
      if (!FAULTS.includes(fault!)) throw new UsageError(`the fault is one of ${FAULTS.join(', ')}, not "${fault}"`);
      const id = await resolveAccelerator(ctx, ref!);
      const r = await withProgress(
        ctx.io,
        ctx.json,
        `injecting ${fault} into ${ref}`,
        ctx.api.post<Injected>(`/accelerators/${encodeURIComponent(id)}/fake-fault`, { fault, ...(o.reason ? { reason: o.reason } : {}) }),
      );
      if (ctx.json) return printJson(ctx, r);
      ctx.io.out(`${ref} on ${r.host}: ${r.fault === 'clear' ? 'fault cleared' : `${r.fault} fault injected (${r.reason})`}; ${r.note}\n`);
    },
  );
}
