import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../bus/bus.js';
import { Subjects, type EventKind } from '../bus/subjects.js';
import { CyborgError, isCyborgError, TransitionInvalidError } from '../errors/index.js';
import {
  TransitionEvent, type AcceleratorView, type ArqView, type Binding, type BoundTo, type CommittedEvent, type ControlPlane, type DeviceT,
  type Documents, type DriverControl, type HostView,
} from '../model/index.js';
import {
  checkedCall, ControlReply, ControlRequest, ViewsBatch, type ArgsOf, type CheckedCall, type ControlOp, type ControlReplyMsg,
  type ControlRequestMsg, type ReplyOf, type SnapshotPageMsg, type ViewsBatchMsg,
} from './messages.js';

/**
 * What the responder needs of the conductor it serves: the control plane itself, its committed
 * actors by host (for snapshots and view batches), and the ARQ home's remote bind effects.
 */
export interface ServedConductor extends ControlPlane {
  readonly hosts: ReadonlyMap<string, { view(): HostView; inventory(): DeviceT[]; readonly accelerators: ReadonlyMap<string, { view(): AcceleratorView }> }>;
  readonly arqs: ReadonlyMap<string, { readonly state: string; view(): ArqView }>;
  readonly documents: Documents;
  readonly driverAdmin: DriverControl;
  attachForArq(arqUuid: string, binding: Binding): Promise<BoundTo>;
  releaseForArq(arqUuid: string, boundTo: BoundTo | null, asOwner?: boolean): Promise<boolean>;
}

/** Hosts per snapshot page: a page (views + inventories) stays well under NATS's 1 MiB payload. */
const PAGE_HOSTS = 20;
/** Items per views message, for the same reason. */
const BATCH_ITEMS = 200;

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
      return { ok: true, result: await serve(opts, checked) };
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
  'createArq', 'bindArq', 'unbindArq', 'deleteArq',
  'documents.createProfile', 'documents.deleteProfile', 'documents.createAttribute', 'documents.deleteAttribute', 'documents.setDeviceStatus',
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
  snapshot: (a, o) => snapshotPage(o, a.cursor),
  history: (a, o) => o.conductor.history(a.id, a.limit),
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
};

function serve(opts: ResponderOptions, c: CheckedCall): Promise<unknown> {
  // One handler per call, picked by the call's own name: its arguments were checked against that call's schema.
  const handler = HANDLERS[c.op] as (a: typeof c.args, o: ResponderOptions) => unknown;
  return Promise.resolve(handler(c.args, opts));
}

/** One page of this conductor's committed state, by host name order; the first page adds ARQs and documents. */
async function snapshotPage(opts: ResponderOptions, cursor: number): Promise<SnapshotPageMsg> {
  const c = opts.conductor;
  // ARQs and documents come from the ARQ home only (the others' are not kept current), once it
  // has loaded them: an api process starting beside conductors that start too must not read none.
  const home = cursor !== 0 || !opts.arqHome ? opts.conductorId : await opts.arqHome.where().catch(() => undefined);
  const shared = cursor === 0 && home === opts.conductorId;
  const names = [...c.hosts.keys()].sort();
  const page = names.slice(cursor, cursor + PAGE_HOSTS);
  const d = c.documents;
  return {
    conductorId: opts.conductorId,
    conductors: opts.liveConductors?.() ?? [opts.conductorId],
    hosts: page.map((n) => ({ view: c.hosts.get(n)!.view(), inventory: c.hosts.get(n)!.inventory() })),
    accelerators: page.flatMap((n) => [...c.hosts.get(n)!.accelerators.values()].map((x) => x.view())),
    ...(cursor === 0 ? {
      arqs: shared ? c.listArqs() : [],
      documents: shared ? [
        ...d.listProfiles().map((x) => ({ collection: 'device_profiles', id: x.uuid, body: x })),
        ...d.listAttributes().map((x) => ({ collection: 'attributes', id: x.uuid, body: x })),
      ] : [],
    } : {}),
    next: cursor + PAGE_HOSTS < names.length ? cursor + PAGE_HOSTS : null,
  };
}

function toWire(err: unknown): Extract<ControlReplyMsg, { ok: false }>['error'] {
  if (err instanceof TransitionInvalidError) {
    return { code: err.code, message: err.message, details: err.details, state: err.state, allowed: err.allowed };
  }
  if (isCyborgError(err)) return { code: err.code, message: err.message, details: err.details };
  return { code: 'internal', message: err instanceof Error ? err.message : String(err), details: {} };
}

/**
 * Publishes what the conductor committed: each transition on `cyborg.events.<kind>`, and the
 * committed views it changed on `cyborg.views` (batched per turn of the event loop, so a burst
 * becomes a few messages while an idle system adds no delay).
 */
export class ViewPublisher {
  private accelerators = new Map<string, string>();
  private hosts = new Map<string, boolean>();
  private arqs = new Set<string>();
  private docs: ViewsBatchMsg['documents'] = [];
  private transitions: CommittedEvent[] = [];
  private scheduled = false;
  private off: () => void;

  constructor(private readonly bus: Bus, private readonly conductor: ServedConductor, private readonly conductorId: string) {
    this.off = conductor.hub.subscribe((ev) => this.onCommitted(ev));
  }

  /** A host's view (and its inventory) changed without a transition: adoption, re-registration. */
  host(name: string, withInventory = true): void {
    this.hosts.set(name, withInventory || (this.hosts.get(name) ?? false));
    this.schedule();
  }

  document(collection: string, id: string, body: object | null): void {
    this.docs.push({ collection, id, body: body as Record<string, unknown> | null });
    this.schedule();
  }

  stop(): void {
    this.off();
    this.flush();
  }

  private onCommitted(ev: CommittedEvent): void {
    this.bus.publish(Subjects.event(kindOf(ev)), TransitionEvent, ev);
    this.transitions.push(ev);
    if (ev.kind === 'accelerator' && ev.host) this.accelerators.set(ev.id, ev.host);
    if (ev.kind === 'arq') this.arqs.add(ev.id);
    if (ev.host) this.hosts.set(ev.host, this.hosts.get(ev.host) ?? ev.from === 'none');
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const c = this.conductor;
    const hosts = [...this.hosts].flatMap(([name, inv]) => {
      const h = c.hosts.get(name);
      return h ? [{ view: h.view(), ...(inv ? { inventory: h.inventory() } : {}) }] : [];
    });
    const accelerators = [...this.accelerators].flatMap(([id, host]) => {
      const a = c.hosts.get(host)?.accelerators.get(id);
      return a ? [a.view()] : [];
    });
    const arqs: ArqView[] = [];
    const deleted: string[] = [];
    for (const id of this.arqs) {
      const a = c.arqs.get(id);
      if (a && a.state !== 'Deleted') arqs.push(a.view());
      else deleted.push(id);
    }
    const batch = { hosts, accelerators, arqs, documents: this.docs, transitions: this.transitions };
    this.accelerators = new Map();
    this.hosts = new Map();
    this.arqs = new Set();
    this.docs = [];
    this.transitions = [];
    for (const part of chunks(batch)) this.bus.publish(Subjects.views, ViewsBatch, { conductorId: this.conductorId, ...part, deleted: { arqs: deleted } });
  }
}

function kindOf(ev: CommittedEvent): EventKind {
  return ev.kind === 'accelerator' ? 'transition' : ev.kind;
}

/** Splits a batch so that no message is too large; transitions ride with the last part (after their views). */
function* chunks(b: Omit<ViewsBatchMsg, 'conductorId' | 'deleted'>): Generator<Omit<ViewsBatchMsg, 'conductorId' | 'deleted'>> {
  const empty = { hosts: [], accelerators: [], arqs: [], documents: [], transitions: [] };
  for (let i = 0; i < b.hosts.length; i += BATCH_ITEMS / 10) yield { ...empty, hosts: b.hosts.slice(i, i + BATCH_ITEMS / 10) };
  for (let i = 0; i < b.accelerators.length; i += BATCH_ITEMS) yield { ...empty, accelerators: b.accelerators.slice(i, i + BATCH_ITEMS) };
  for (let i = 0; i < b.transitions.length; i += BATCH_ITEMS * 2) {
    const last = i + BATCH_ITEMS * 2 >= b.transitions.length;
    yield { ...empty, ...(last ? { arqs: b.arqs, documents: b.documents } : {}), transitions: b.transitions.slice(i, i + BATCH_ITEMS * 2) };
  }
  if (b.transitions.length === 0 && (b.arqs.length > 0 || b.documents.length > 0)) yield { ...empty, arqs: b.arqs, documents: b.documents };
}
