import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { withGlobalRequestId } from '../openstack/request-id.js';
import { withCallDeadline } from '../actors/runtime/index.js';
import { CyborgError, isCyborgError, publicMessage, TransitionInvalidError } from '../errors/index.js';
import { positionalArgs, type CommittedState, type ConductorRooms, type ControlRooms, type ControlRow } from '../model/index.js';
import {
  checkedCall,
  ControlCalls,
  ControlReply,
  ControlRequest,
  type ArgsOf,
  type CheckedCall,
  type ControlOp,
  type ControlReplyMsg,
  type ControlRequestMsg,
  type SnapshotPageMsg,
} from './messages.js';
import { checkPayload, maxPayloadOf } from './payload.js';
import { servedTooLate } from './deadline.js';
import { snapshotPage, type SnapshotSource } from './snapshot.js';
import type { ViewPublisher } from './view-publisher.js';

export { ViewPublisher } from './view-publisher.js';

/**
 * What the responder needs of the conductor it serves: its committed actors by host (for
 * snapshots and view batches) and its rooms, where each call's handler lives (the call table's
 * `handler`), with the writes the views messages announce (documents, retired hosts).
 */
export interface ServedConductor extends CommittedState, SnapshotSource {
  readonly rooms: ConductorRooms;
}

export interface ResponderOptions {
  bus: Bus;
  conductor: ServedConductor;
  conductorId: string;
  /** The lease holder of a host (several conductors); absent with a single conductor. */
  ownerOf?: (host: string) => string | undefined;
  /**
   * Claims a host nobody holds if the lease table records it (see HostRouter.route): its holder
   * then (this conductor's id, or the one that won), `undefined` for a host never recorded (served
   * here: "not found" is the truth), `null` when no one holds it after all.
   */
  claimOrphan?: (host: string) => Promise<string | undefined | null>;
  /** Resolves once a host this conductor has just taken over is rebuilt (see HostRouter). */
  settled?: (host: string) => Promise<void>;
  /** Where ARQ calls are served (several conductors; see ArqHome); absent with a single conductor. */
  arqHome?: { where(): Promise<string> };
  liveConductors?: () => string[];
  /** Why the conductor's database is not answering now; undefined while it is (`readiness`). */
  databaseProblem?: () => string | undefined | Promise<string | undefined>;
  /** Why this conductor's part of the view is not complete yet (hosts it is taking over), or undefined. */
  hostsProblem?: () => string | undefined;
  publisher: ViewPublisher;
  timeoutMs: number;
  log: Logger;
}

/**
 * The conductor side of the api role's ControlPlane client: answers calls by name on the shared
 * subject (any conductor) and on its own; a call about a host another conductor holds, or an
 * ARQ call when another conductor is the ARQ home, is forwarded there once. Errors travel as
 * their stable codes and come back as the same classes.
 */
export function serveControlPlane(opts: ResponderOptions): Unsubscribe {
  const { bus, conductorId } = opts;
  const rooms: Record<string, object> = { ...opts.conductor.rooms, views: viewsRoom(opts) };
  // What api processes learn of these writes comes in the views messages (their own reply comes first).
  const offWrites = [
    opts.conductor.rooms.documents.onWritten((collection, id, body) => opts.publisher.document(collection, id, body)),
    opts.conductor.rooms.hosts.onRetired((host) => opts.publisher.retired(host)),
  ];
  const handle = async (req: ControlRequestMsg, _subject: string, written: number): Promise<ControlReplyMsg> => {
    try {
      // Checked before anything else: a malformed call is refused here, never forwarded or run.
      const checked = checkedCall(req, written);
      // "503 is true": nothing of the call is committed after its caller stops waiting (control/deadline.ts).
      const deadline = req.budgetMs ? Date.now() + req.budgetMs : undefined;
      const owner = await whereServed(opts, req);
      if (owner && owner !== conductorId) {
        if (req.forwarded) throw new CyborgError('lease.not_owner', `the call moved on to conductor ${owner} meanwhile; retry it`, { owner });
        const budget = deadline === undefined ? {} : { budgetMs: Math.max(1, deadline - Date.now()) };
        return await bus.request(
          Subjects.conductorApiOf(owner),
          ControlRequest,
          ControlReply,
          { ...req, forwarded: true, ...budget },
          { timeoutMs: opts.timeoutMs },
        );
      }
      // The request's global id goes with the work it starts (a Glance download for a bind's
      // programming, Placement, Nova), as it does in the all-in-one.
      if (deadline !== undefined && Date.now() >= deadline) throw servedTooLate(req.op, Date.now() - deadline);
      const requestId = (checked.args as { meta?: { requestId?: string } }).meta?.requestId;
      const reply = { ok: true as const, result: await withGlobalRequestId(requestId, () => withCallDeadline(deadline, () => serve(rooms, checked))) };
      // A reply NATS would refuse is lost without a word (the caller only times out): say why instead.
      checkPayload(`reply to ${req.op}`, reply, maxPayloadOf(bus));
      return reply;
    } catch (err) {
      if (!isCyborgError(err)) opts.log.error({ err, op: req.op }, 'control call failed');
      return { ok: false, error: toWire(err) };
    }
  };
  const offs = [
    bus.respond(Subjects.conductorApi, ControlRequest, ControlReply, handle, { queue: 'cyborg-conductors-api' }),
    bus.respond(Subjects.conductorApiOf(conductorId), ControlRequest, ControlReply, handle),
  ];
  return () => [...offs, ...offWrites].forEach((o) => o());
}

/** The conductor that must serve `req`: the ARQ home for its calls, else its host's lease holder. */
async function whereServed(opts: ResponderOptions, req: ControlRequestMsg): Promise<string | undefined> {
  if (opts.arqHome && ControlCalls[req.op as ControlOp].home) return opts.arqHome.where();
  if (!req.host) return undefined;
  const owner = req.forwarded ? undefined : await holderOf(opts, req.host);
  // Served here: wait for the host's rebuild if we have just taken it over (the lease is ours
  // before its actors are), or an accelerator of it would be "not found".
  if (!owner || owner === opts.conductorId) await opts.settled?.(req.host);
  return owner;
}

/**
 * The conductor that holds `host` now. A host nobody holds — its holder stopped and gave its lease
 * back, and no one has claimed it yet — is claimed here first, as its agent's next report would
 * claim it: served from no actors, a call about it would answer "not found" for a device that
 * exists. A claim that finds another holder names it; one that finds none is a 503 to retry.
 */
async function holderOf(opts: ResponderOptions, host: string): Promise<string | undefined> {
  const owner = opts.ownerOf?.(host);
  if (owner !== undefined || !opts.claimOrphan) return owner;
  const claimed = await opts.claimOrphan(host);
  if (claimed === null) throw new CyborgError('lease.lost', `host ${host} is between conductors (its lease is being taken over); retry`, { host });
  return claimed;
}

/** The responder's own room (the table's `views.…` handlers): what only the bus side knows. */
function viewsRoom(opts: ResponderOptions): ControlRooms['views'] {
  return {
    snapshot: (a) => servePage(opts, a),
    readiness: async () => {
      const hosts = opts.hostsProblem?.();
      return { conductorId: opts.conductorId, database: (await opts.databaseProblem?.()) ?? 'ok', ...(hosts ? { hosts } : {}) };
    },
  };
}

/** Runs a checked call in the room its row names, with its arguments in the row's order. */
function serve(rooms: Record<string, object>, c: CheckedCall): Promise<unknown> {
  const row = ControlCalls[c.op] as ControlRow;
  const [room, fn] = row.handler.split('.') as [string, string];
  const target = rooms[room] as Record<string, (...a: unknown[]) => unknown>;
  // A handler that returns nothing answers `null` (JSON has no undefined).
  return Promise.resolve(target[fn]!(...positionalArgs(row, c.args as Record<string, unknown>))).then((r) => r ?? null);
}

/** One page of this conductor's committed state, under both the reader's payload limit and ours. */
async function servePage(opts: ResponderOptions, args: ArgsOf<'snapshot'>): Promise<SnapshotPageMsg> {
  // ARQs and documents come from the ARQ home only (the others' are not kept current), once it
  // has loaded them: an api process starting beside conductors that start too must not read none.
  const servesArqs = !opts.arqHome || (await opts.arqHome.where().catch(() => undefined)) === opts.conductorId;
  const limit = Math.min(maxPayloadOf(opts.bus), args.maxBytes ?? Number.POSITIVE_INFINITY);
  return snapshotPage(
    opts.conductor,
    {
      conductorId: opts.conductorId,
      epoch: opts.publisher.epoch,
      seq: opts.publisher.seq,
      conductors: opts.liveConductors?.() ?? [opts.conductorId],
      servesArqs,
      // A quarter of the limit: items are weighed one by one, and a reply's envelope comes on top.
      budget: Number.isFinite(limit) ? Math.floor(limit * 0.75) : 4 * 1024 * 1024,
    },
    args.cursor,
  );
}

function toWire(err: unknown): Extract<ControlReplyMsg, { ok: false }>['error'] {
  if (err instanceof TransitionInvalidError) {
    return { code: err.code, message: err.message, details: err.details, state: err.state, allowed: err.allowed };
  }
  // Never the database's own words on the wire (the log above keeps them).
  if (isCyborgError(err)) return { code: err.code, message: publicMessage(err), details: err.details };
  return { code: 'internal', message: publicMessage(err), details: {} };
}
