import { Option, type Command } from 'commander';
import { acceleratorMachine, AcceleratorStates } from '../../machines/index.js';
import { ApiError } from '../client.js';
import { fields, table, UsageError, withProgress, type Io } from '../output.js';
import { act, apiCommand, group, printJson, type Ctx } from './common.js';
import type { AcceleratorView } from '../../model/index.js';

const path = (id: string): string => `/accelerators/${encodeURIComponent(id)}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Accelerators are named by id or by name (`host_0000_3b_00_0`): a name is looked up. */
export async function resolveAccelerator(ctx: Ctx, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref;
  const accelerators = await ctx.api.list<AcceleratorView>('/accelerators', 'accelerators');
  const found = accelerators.filter((a) => a.name === ref);
  if (found.length === 1) return found[0]!.id;
  throw new ApiError(404, 'accelerator.not_found', `no accelerator named ${ref} (see: cyborg accelerator list)`, {});
}

/** Health in a word, with the mark beside it (`quarantined, draining`): what the alert's runbook asks for first. */
function healthOf(a: AcceleratorView): string {
  const status = a.health?.status ?? 'ok';
  const mark = a.maintenance?.mark;
  return `${status === 'unknown' ? 'not observed' : status}${a.health?.fatal && status === 'quarantined' ? ' (fatal)' : ''}${mark ? `, ${mark}` : ''}`;
}

/** A project as people know it: Keystone's name with the id beside it, the id alone where no name is known. */
function project(a: AcceleratorView, id: string): string {
  const name = a.projectNames?.[id];
  return name ? `${name} (${id})` : id;
}

/** Who holds it: each instance, with its project (by name) and ARQ where known. */
function holders(a: AcceleratorView): string {
  return (
    a.allocations
      .map((x) => `instance ${x.instanceUuid}${x.projectId ? ` of project ${project(a, x.projectId)}` : ''}${x.arqUuid ? ` (ARQ ${x.arqUuid})` : ''}`)
      .join('\n') || 'none'
  );
}

/** The projects that hold it, by name, in one cell (`demo ×2, other`). */
function heldBy(a: AcceleratorView): string {
  const count = new Map<string, number>();
  for (const x of a.allocations) {
    const who = x.projectId ? (a.projectNames?.[x.projectId] ?? x.projectId) : 'no project';
    count.set(who, (count.get(who) ?? 0) + 1);
  }
  return [...count].map(([who, n]) => (n > 1 ? `${who} ×${n}` : who)).join(', ');
}

function rows(accs: AcceleratorView[]): string {
  return table(
    ['ID', 'NAME', 'HOST', 'TYPE', 'RESOURCE CLASS', 'STATE', 'HEALTH', 'IN USE', 'HELD BY', 'ALLOWED'],
    accs.map((a) => [
      a.id,
      a.name,
      a.host,
      a.deviceType,
      a.resourceClass ?? '',
      `${a.state}${a.missing ? ' (missing)' : ''}`,
      healthOf(a),
      `${a.allocations.length}/${a.capacity}`,
      heldBy(a),
      a.allowed.join(' '),
    ]),
  );
}

function show(a: AcceleratorView): string {
  return fields([
    ['id', a.id],
    ['name', a.name],
    ['host', a.host],
    ['type', a.deviceType],
    ['vendor / model', `${a.vendor} ${a.model}`],
    ['driver', a.driver],
    ['resource class', a.resourceClass ?? ''],
    ['traits', a.traits.join(' ')],
    ['resource provider', a.rpUuid],
    ['state', a.state],
    ['allowed now', a.allowed.join(' ') || 'nothing'],
    ['health', healthOf(a)],
    ['health reason', a.health?.reason ?? 'none'],
    ['health since', a.health?.since ?? ''],
    [
      'maintenance',
      a.maintenance
        ? `${a.maintenance.mark} (by ${a.maintenance.scopes.map((sc) => (sc === 'host' ? `host ${a.host}'s drain` : 'the device')).join(' and ')}${a.maintenance.since ? ` since ${a.maintenance.since}` : ''})`
        : 'none',
    ],
    ['held by', holders(a)],
    ['programmed', a.program ? (a.program.functionId ?? a.program.bitstreamId ?? 'yes') : 'no'],
    ['last error', a.error ? `${a.error.op}: ${a.error.reason}` : 'none'],
    ['updated', a.updatedAt],
  ]);
}

/** How often a command that waits for a long operation looks at its accelerator again. */
const POLL_MS = 1_000;

/**
 * POSTs a transition and prints `name: before → after` (or the view as JSON). An operation that
 * outlasts the API's deadline is answered 202 (it goes on): the command follows the accelerator,
 * with a spinner showing its state, until the state settles, unless `wait` is false.
 */
async function transition(ctx: Ctx, ref: string, action: string, verb: string, body: Record<string, unknown> = {}, wait = true): Promise<void> {
  const id = await resolveAccelerator(ctx, ref);
  const before = ctx.json ? undefined : await ctx.api.get<AcceleratorView>(path(id));
  const text = `${verb} ${before?.name ?? id}`;
  const r = await withProgress(ctx.io, ctx.json, text, ctx.api.postAccepting<AcceleratorView>(`${path(id)}/${action}`, body));
  let after = r.body;
  if (r.accepted && !wait) {
    if (ctx.json) return printJson(ctx, after);
    ctx.io.out(`${after.name}: ${before!.state} → ${after.state} (accepted, still running; follow it with: cyborg accelerator show ${id})\n`);
    return;
  }
  if (r.accepted) after = await withProgress(ctx.io, ctx.json, `${text}: ${after.state}`, settle(ctx, r.accepted.location));
  if (ctx.json) return printJson(ctx, after);
  ctx.io.out(
    `${after.name}: ${before!.state} → ${after.state}${after.state === AcceleratorStates.error && after.error ? ` (${after.error.op}: ${after.error.reason})` : ''}\n`,
  );
}

/** Polls an accelerator until its state settles (its driver operation done: no `busy` tag). */
async function settle(ctx: Ctx, location: string): Promise<AcceleratorView> {
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const v = await ctx.api.get<AcceleratorView>(location);
    if (!v.tags.includes('busy')) return v;
  }
}

/** `cyborg accelerator list|show|enable|disable|program|attach|detach|retry|remove`. */
export function addAcceleratorCommands(program: Command, io: Io): void {
  const acc = group(
    program,
    'accelerator',
    'Accelerators and their lifecycle (inactive → ready → programmed → attached); <accelerator> is an id or a name',
    io,
  );

  act<{ host?: string; state?: string; type?: string; driver?: string }>(
    apiCommand(acc, 'list', 'List accelerators with their state and what they allow now', io)
      .option('--host <host>', 'only this host')
      .addOption(new Option('--state <state>', 'only in this state').choices(STATES))
      .option('--type <type>', 'only this device type (GPU, FPGA, NIC, …)')
      .option('--driver <name>', "only this driver's (backend's)"),
    io,
    async (ctx, _a, o) => {
      const all = await ctx.api.list<AcceleratorView>('/accelerators', 'accelerators', { host: o.host, state: o.state, type: o.type?.toUpperCase() });
      const accelerators = o.driver ? all.filter((a) => a.driver === o.driver) : all;
      // A host nobody knows is a mistake (a typo, another deployment), not an empty host: exit 3 naming it.
      if (o.host && all.length === 0) await ctx.api.get(`/hosts/${encodeURIComponent(o.host)}`);
      if (ctx.json) return printJson(ctx, accelerators);
      io.out(accelerators.length ? rows(accelerators) : 'No accelerators.\n');
    },
  );

  act(apiCommand(acc, 'show <accelerator>', 'One accelerator in full', io), io, async (ctx, [id]) => {
    const a = await ctx.api.get<AcceleratorView>(path(await resolveAccelerator(ctx, id!)));
    if (ctx.json) return printJson(ctx, a);
    io.out(show(a));
  });

  const simple: [string, string, string][] = [
    ['enable', 'enabling', 'Make it usable: the driver installs it (inactive → ready)'],
    ['disable', 'disabling', 'Give it back: the driver uninstalls it (ready / programmed → inactive)'],
    ['retry', 'retrying', 'Retry the driver operation that failed (from error)'],
    ['remove', 'removing', 'Remove it (never while attached)'],
  ];
  const noWait = '--no-wait';
  const noWaitHelp = 'return as soon as the API accepts an operation that goes on (202), without waiting for it to settle';
  for (const [action, verb, description] of simple) {
    act<{ wait: boolean }>(apiCommand(acc, `${action} <accelerator>`, description, io).option(noWait, noWaitHelp), io, (ctx, [id], o) =>
      transition(ctx, id!, action, verb, {}, o.wait),
    );
  }

  act<{ bitstream?: string; function?: string; wait: boolean }>(
    apiCommand(acc, 'program <accelerator>', 'Load a bitstream or function (ready / programmed → programmed)', io)
      .option('--bitstream <id>', 'bitstream (image) id')
      .option('--function <id>', 'function id')
      .option(noWait, noWaitHelp),
    io,
    async (ctx, [id], o) => {
      if (!o.bitstream && !o.function) throw new UsageError('say what to program: --bitstream <id> or --function <id>');
      if (o.bitstream && o.function) throw new UsageError('give --bitstream <id> or --function <id>, not both: a programming loads one image');
      await transition(ctx, id!, 'program', 'programming', { bitstreamId: o.bitstream, functionId: o.function }, o.wait);
    },
  );

  act<{ instance: string; project?: string }>(
    apiCommand(acc, 'attach <accelerator>', 'Attach an instance to its first free handle, directly (no ARQ; see attach-instance)', io)
      .requiredOption('--instance <uuid>', 'the instance')
      .option('--project <id>', 'its project'),
    io,
    (ctx, [id], o) => transition(ctx, id!, 'attach', 'attaching', { instanceUuid: o.instance, projectId: o.project }),
  );

  act<{ instance?: string; handle?: string }>(
    apiCommand(acc, 'detach <accelerator>', 'Detach an instance (by instance or handle; the first one if neither)', io)
      .option('--instance <uuid>', 'the instance')
      .option('--handle <uuid>', 'the attach handle'),
    io,
    async (ctx, [ref], o) => {
      const id = await resolveAccelerator(ctx, ref!);
      if (o.instance || o.handle) await mustHold(ctx, id, o);
      await transition(ctx, id, 'detach', 'detaching', { instanceUuid: o.instance, handleUuid: o.handle });
    },
  );
}

/** The states `--state` takes: the accelerator machine's own (not its momentary settle steps). */
const STATES = Object.keys(acceleratorMachine.config.states ?? {}).filter((s) => !s.startsWith('settle'));

/**
 * Refuses a detach of an instance or handle the accelerator does not hold, saying so: the
 * transition's own refusal read "DETACH is not allowed now (allowed: DETACH)".
 */
async function mustHold(ctx: Ctx, id: string, o: { instance?: string; handle?: string }): Promise<void> {
  const a = await ctx.api.get<AcceleratorView>(path(id));
  if (a.allocations.some((x) => (!o.instance || x.instanceUuid === o.instance) && (!o.handle || x.handleUuid === o.handle))) return;
  const what = o.instance ? `instance ${o.instance}` : `handle ${o.handle}`;
  const held = a.allocations.map((x) => `instance ${x.instanceUuid} (handle ${x.handleUuid})`).join(', ');
  throw new UsageError(`${what} is not attached to ${a.name}: ${held ? `it holds ${held}` : 'nothing is attached to it'}`);
}
