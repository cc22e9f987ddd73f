import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { withGlobalRequestId } from '../openstack/request-id.js';
import { CyborgError, isCyborgError, publicMessage, TransitionInvalidError } from '../errors/index.js';
import type { ArqHold, Binding, BoundTo, CommittedState, ControlPlane, Documents, DriverControl, RequestMeta, StateDigest } from '../model/index.js';
import {
  checkedCall,
  ControlReply,
  ControlRequest,
  type ArgsOf,
  type CheckedCall,
  type ControlOp,
  type ControlReplyMsg,
  type ControlRequestMsg,
  type ReplyOf,
  type SnapshotPageMsg,
} from './messages.js';
import { checkPayload, maxPayloadOf } from './payload.js';
import { snapshotPage } from './snapshot.js';
import type { ViewPublisher } from './view-publisher.js';

export { ViewPublisher } from './view-publisher.js';

/**
 * What the responder needs of the conductor it serves: the control plane itself, its committed
 * actors by host (for snapshots and view batches), and the ARQ home's remote bind effects.
 */
export interface ServedConductor extends ControlPlane, CommittedState {
  readonly hub: CommittedState['hub'];
  readonly documents: Documents;
  readonly driverAdmin: DriverControl;
  attachForArq(arqUuid: string, binding: Binding): Promise<BoundTo>;
  releaseForArq(arqUuid: string, boundTo: BoundTo | null, asOwner?: boolean): Promise<boolean>;
  arqHolds(uuids: readonly string[]): Record<string, ArqHold | null>;
  arqReleased(arqUuid: string, reason: string, meta: RequestMeta): Promise<boolean>;
  stateDigest(): Promise<StateDigest>;
  retireHost(name: string, meta: RequestMeta): Promise<{ host: string; accelerators: string[] }>;
}

export interface ResponderOptions {
  bus: Bus;
  conductor: ServedConductor;
  conductorId: string;
  /** The lease holder of a host (several conductors); absent with a single conductor. */
  ownerOf?: (host: string) => string | undefined;
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
  const handle = async (req: ControlRequestMsg): Promise<ControlReplyMsg> => {
    try {
      // Checked before anything else: a malformed call is refused here, never forwarded or run.
      const checked = checkedCall(req);
      const owner = await whereServed(opts, req);
      if (owner && owner !== conductorId) {
        if (req.forwarded) throw new CyborgError('lease.not_owner', `the call moved on to conductor ${owner} meanwhile; retry it`, { owner });
        return await bus.request(Subjects.conductorApiOf(owner), ControlRequest, ControlReply, { ...req, forwarded: true }, { timeoutMs: opts.timeoutMs });
      }
      // The request's global id goes with the work it starts (a Glance download for a bind's
      // programming, Placement, Nova), as it does in the all-in-one.
      const requestId = (checked.args as { meta?: { requestId?: string } }).meta?.requestId;
      const reply = { ok: true as const, result: await withGlobalRequestId(requestId, () => serve(opts, checked)) };
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
  return () => offs.forEach((o) => o());
}

/** Calls the ARQ home serves: ARQs, and the documents Nova and operators write. */
const HOME_OPS = new Set<string>([
  'createArq',
  'bindArq',
  'unbindArq',
  'deleteArq',
  'arqHolds',
  'arqReleased',
  'documents.createProfile',
  'documents.deleteProfile',
  'documents.createAttribute',
  'documents.deleteAttribute',
  'documents.setDeviceStatus',
]);

/** The conductor that must serve `req`: the ARQ home for its calls, else its host's lease holder. */
async function whereServed(opts: ResponderOptions, req: ControlRequestMsg): Promise<string | undefined> {
  if (opts.arqHome && HOME_OPS.has(req.op)) return opts.arqHome.where();
  if (!req.host) return undefined;
  const owner = req.forwarded ? undefined : opts.ownerOf?.(req.host);
  // Served here: wait for the host's rebuild if we have just taken it over (the lease is ours
  // before its actors are), or an accelerator of it would be "not found".
  if (!owner || owner === opts.conductorId) await opts.settled?.(req.host);
  return owner;
}

type Handlers = { [O in ControlOp]: (a: ArgsOf<O>, opts: ResponderOptions) => Promise<ReplyOf<O>> | ReplyOf<O> };

/** Each call, run on the conductor with its checked arguments; document writes are published to every api process. */
const HANDLERS: Handlers = {
  snapshot: (a, o) => servePage(o, a),
  history: (a, o) => o.conductor.history(a.id, a.limit),
  audit: (a, o) => o.conductor.audit(a.q),
  act: (a, o) => o.conductor.act(a.id, a.event, a.meta),
  attach: (a, o) => o.conductor.attach(a.id, a.req, a.meta),
  detach: (a, o) => o.conductor.detach(a.id, a.req, a.meta),
  createArq: (a, o) => o.conductor.createArq(a.req, a.meta),
  bindArq: (a, o) => o.conductor.bindArq(a.uuid, a.binding, a.meta),
  unbindArq: (a, o) => o.conductor.unbindArq(a.uuid, a.meta),
  deleteArq: (a, o) => o.conductor.deleteArq(a.uuid, a.meta),
  'documents.createProfile': async (a, o) => {
    const doc = await o.conductor.documents.createProfile(a.doc);
    o.publisher.document('device_profiles', doc.uuid, doc);
    return doc;
  },
  'documents.deleteProfile': async (a, o) => {
    await o.conductor.documents.deleteProfile(a.uuid);
    o.publisher.document('device_profiles', a.uuid, null);
    return null;
  },
  'documents.createAttribute': async (a, o) => {
    const doc = await o.conductor.documents.createAttribute(a.doc);
    o.publisher.document('attributes', doc.uuid, doc);
    return doc;
  },
  'documents.deleteAttribute': async (a, o) => {
    await o.conductor.documents.deleteAttribute(a.uuid);
    o.publisher.document('attributes', a.uuid, null);
    return null;
  },
  'documents.setDeviceStatus': async (a, o) => {
    await o.conductor.documents.setDeviceStatus(a.uuid, a.status);
    o.publisher.document('device_status', a.uuid, { uuid: a.uuid, status: a.status, updatedAt: new Date().toISOString() });
    return null;
  },
  'drivers.list': (a, o) => o.conductor.driverAdmin.listDrivers(a.filter),
  'drivers.get': (a, o) => o.conductor.driverAdmin.getDriver(a.ref, a.host),
  'drivers.install': (a, o) => o.conductor.driverAdmin.installDriver(a.ref, a.opts, a.meta),
  'drivers.uninstall': (a, o) => o.conductor.driverAdmin.uninstallDriver(a.ref, a.opts, a.meta),
  'drivers.update': (a, o) => o.conductor.driverAdmin.updateDriver(a.ref, a.opts, a.meta),
  'services.list': (a, o) => o.conductor.driverAdmin.listServices(a.filter),
  'services.discover': (a, o) => o.conductor.driverAdmin.discoverServices(a.opts, a.meta),
  'instances.attach': (a, o) => o.conductor.driverAdmin.attachInstance(a.instanceUuid, a.req, a.meta),
  'instances.detach': (a, o) => o.conductor.driverAdmin.detachInstance(a.instanceUuid, a.meta),
  arqAttach: (a, o) => o.conductor.attachForArq(a.arqUuid, a.binding),
  arqRelease: (a, o) => o.conductor.releaseForArq(a.arqUuid, a.boundTo, a.asOwner),
  arqHolds: (a, o) => o.conductor.arqHolds(a.uuids),
  arqReleased: (a, o) => o.conductor.arqReleased(a.arqUuid, a.reason, a.meta),
  digest: (_a, o) => o.conductor.stateDigest(),
  'hosts.retire': async (a, o) => {
    const retired = await o.conductor.retireHost(a.host, a.meta);
    o.publisher.retired(a.host);
    return retired;
  },
  relayout: (a, o) => o.conductor.relayout(a.host, a.req, a.meta),
  'usage.accelerator': (a, o) => o.conductor.acceleratorUsage(a.id),
  'usage.host': (a, o) => o.conductor.hostUsage(a.host),
  readiness: async (_a, o) => {
    const hosts = o.hostsProblem?.();
    return { conductorId: o.conductorId, database: (await o.databaseProblem?.()) ?? 'ok', ...(hosts ? { hosts } : {}) };
  },
};

function serve(opts: ResponderOptions, c: CheckedCall): Promise<unknown> {
  // One handler per call, picked by the call's own name: its arguments were checked against that call's schema.
  const handler = HANDLERS[c.op] as (a: typeof c.args, o: ResponderOptions) => unknown;
  return Promise.resolve(handler(c.args, opts));
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
