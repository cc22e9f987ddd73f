import type { Logger } from 'pino';
import type { Bus } from '../bus/index.js';
import { Subjects } from '../bus/index.js';
import { CyborgError, ErrorCodes, isCyborgError, NotFoundError, TransitionInvalidError, type ErrorCode } from '../errors/index.js';
import {
  controlRows,
  EventHub,
  namedArgs,
  type About,
  type AcceleratorFilter,
  type AcceleratorView,
  type ArqFilter,
  type ArqView,
  type AttachHandleT,
  type AttributeDoc,
  type Caller,
  type ControlPlane,
  type ControlRow,
  type ControlVerbs,
  type DeviceProfileDoc,
  type DeviceStatusDoc,
  type DeviceT,
  type Documents,
  type DriverControl,
  type DriverView,
  type HostView,
} from '../model/index.js';
import { budgetFor, carriesDeadline, outcomeUnknown } from './deadline.js';
import { ViewCompleteness } from './view-complete.js';
import { isBusy } from './driver-client.js';
import {
  checkedReply,
  ControlCalls,
  ControlReply,
  ControlRequest,
  protocolTooOld,
  sinceOf,
  type ArgsOf,
  type ControlOp,
  type ControlReplyMsg,
  type ReplyOf,
} from './messages.js';
import { ReadModel } from './read-model.js';
import { ViewSync } from './view-sync.js';
import { ViewCheck } from './view-check.js';
import { ArqStates } from '../machines/index.js';

/** A lease changing hands, or no conductor there for a moment. */
const MOVING: ReadonlySet<string> = new Set(['lease.lost', 'lease.not_owner', 'bus.no_responder']);
const REPEAT_AFTER_MS = 250;

/** How long an answer about the conductors' readiness is reused. */
const READINESS_TTL_MS = 2_000;

/**
 * The ControlPlane of an `api` process that runs apart from the conductors. Reads are served
 * from a read model of committed views: loaded page by page from every conductor, then kept
 * current by the numbered views and transitions the conductors publish after each commit (which
 * also feed this process's EventHub), and rebuilt whenever a number is missed (ViewSync). Writes are calls over the bus, sent with the host they are
 * about so that they reach the conductor holding its lease; each reply updates the read model at
 * once, so a client reads its own writes.
 */
export interface RemoteControlPlane extends ControlVerbs {}
export class RemoteControlPlane implements ControlPlane {
  readonly hub = new EventHub();
  readonly documents: Documents;
  /** Driver administration, asked of the conductors (generic-driver spec's commands): the table's `driverAdmin.…` rows. */
  readonly driverAdmin = this.verbs('driverAdmin') as unknown as DriverControl;
  /** Replaced whole by each rebuild (see ViewSync); reads go to the one in place. */
  private model = new ReadModel();
  readonly sync: ViewSync;
  /** The background comparison of the view with the database (control/view-check.ts). */
  readonly viewCheck: ViewCheck;
  private viewCheckTimer: NodeJS.Timeout | undefined;
  /** Whether a miss in the view may still be a conductor's takeover under way (control/view-complete.ts). */
  private readonly completeness: ViewCompleteness;

  constructor(
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly timeoutMs = 30_000,
    private readonly opts: { beaconMs?: number; viewCheckMs?: number } = {},
  ) {
    // The verbs are the call table's rows, each sent as `send` does; the documents' reads are the read model's.
    Object.assign(this, this.verbs(undefined));
    this.documents = Object.assign(new RemoteDocuments(this), this.verbs('documents'));
    this.viewCheck = new ViewCheck({
      fetch: () => this.call('digest', {}),
      view: () => this.model,
      synced: () => this.sync.state === 'synced',
      resync: (why) => this.sync.resync(why),
      log,
    });
    this.completeness = new ViewCompleteness({ takeoverUnderWay: () => this.takeoverUnderWay(), log });
    this.sync = new ViewSync({
      bus,
      log,
      ...opts,
      fetchPage: (subject, args) => callConductor(this.bus, subject, 'snapshot', args, { timeoutMs: this.timeoutMs }),
      current: () => this.model,
      onModel: (m) => {
        this.model = m;
        this.completeness.replaced();
        (this.documents as RemoteDocuments).statusGeneration++;
      },
      onTransitions: (ts) => {
        for (const t of ts) {
          const { seq: _seq, ...record } = t;
          this.hub.publish(record);
        }
      },
    });
  }

  /**
   * Subscribes to committed views and loads every conductor's state, retrying until one answers
   * (an api may start before the conductors); resolves once the view is complete.
   */
  start(): Promise<void> {
    const every = this.opts.viewCheckMs ?? 0;
    if (every > 0 && !this.viewCheckTimer) {
      this.viewCheckTimer = setInterval(() => {
        this.viewCheck.check().catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'view check skipped: no conductor answered'));
      }, every);
      this.viewCheckTimer.unref();
    }
    return this.sync.start();
  }

  stop(): void {
    clearInterval(this.viewCheckTimer);
    this.viewCheckTimer = undefined;
    this.completeness.stop();
    this.sync.stop();
  }

  /** Whether a conductor is still taking over hosts the view lacks (each answers its readiness); undefined if one did not answer. */
  private async takeoverUnderWay(): Promise<boolean | undefined> {
    const ids = this.sync.conductors();
    const subjects = ids.length > 0 ? ids.map((id) => Subjects.conductorApiOf(id)) : [Subjects.conductorApi];
    const answers = await Promise.all(
      subjects.map((s) => callConductor(this.bus, s, 'readiness', {}, { timeoutMs: Math.min(1_000, this.timeoutMs) }).catch(() => undefined)),
    );
    if (answers.some((a) => a === undefined)) return undefined;
    return answers.some((a) => a!.hosts !== undefined);
  }

  /**
   * Why a miss on `id` is not (yet) authoritative — the view is loading, being rebuilt, or a
   * conductor is taking over hosts it lacks — as the 503 to answer; undefined when a miss is a miss.
   */
  unseen(id: string): CyborgError | undefined {
    if (this.sync.state === 'synced' && !this.completeness.incomplete) return undefined;
    const why =
      this.sync.state === 'synced' ? 'a conductor is still taking over hosts this view lacks' : 'this api is still loading its view from the conductors';
    return new CyborgError('bus.no_responder', `${why}; retry shortly`, { id, retryAfterS: 1 });
  }

  /** Why reads are not yet (or no longer) complete and current: `/readyz` says it; undefined once they are. */
  notReady(): string | undefined {
    return this.sync.notReady();
  }

  private readiness: { at: number; answer: Promise<string | undefined> } | undefined;

  /**
   * Why writes would fail now — no conductor answers, or its database is away — for `/readyz`;
   * undefined when a conductor can write. Asked at most every `READINESS_TTL_MS`, whatever the
   * number of probes, and within a second: a probe must not hang on a conductor that is gone.
   */
  conductorProblem(now = Date.now()): Promise<string | undefined> {
    if (this.readiness && now - this.readiness.at < READINESS_TTL_MS) return this.readiness.answer;
    // Every conductor the view holds is asked, each for its own writes (one with nothing to
    // write must not answer for one whose database hangs), and any one when none is known yet.
    const ids = this.sync.conductors();
    const ask = (subject: string, who: string): Promise<string | undefined> =>
      callConductor(this.bus, subject, 'readiness', {}, { timeoutMs: Math.min(1_000, this.timeoutMs) }).then(
        (r) =>
          [
            r.database === 'ok' ? undefined : `conductor ${r.conductorId}: database ${r.database}`,
            r.hosts ? `conductor ${r.conductorId}: ${r.hosts}` : undefined,
          ]
            .filter(Boolean)
            .join('; ') || undefined,
        (err: unknown) => `${who} did not answer: ${err instanceof Error ? err.message : String(err)}`,
      );
    const answer = Promise.all(
      ids.length > 0 ? ids.map((id) => ask(Subjects.conductorApiOf(id), `conductor ${id}`)) : [ask(Subjects.conductorApi, 'no conductor')],
    ).then((problems) => problems.filter((p) => p !== undefined).join('; ') || undefined);
    this.readiness = { at: now, answer };
    return answer;
  }

  // --- reads: the read model ----------------------------------------------------------------

  listHosts(): HostView[] {
    return [...this.model.hosts.values()];
  }

  getHost(name: string): HostView {
    const h = this.model.hosts.get(name);
    if (!h) throw this.missing('host.not_found', name);
    return h;
  }

  hostInventory(name: string): DeviceT[] {
    this.getHost(name);
    return this.model.inventories.get(name) ?? [];
  }

  listAccelerators(filter: AcceleratorFilter = {}): AcceleratorView[] {
    return [...this.model.accelerators.values()].filter(
      (v) => (!filter.host || v.host === filter.host) && (!filter.state || v.state === filter.state) && (!filter.type || v.deviceType === filter.type),
    );
  }

  getAccelerator(id: string): AcceleratorView {
    const a = this.model.accelerators.get(id);
    if (!a) throw this.missing('accelerator.not_found', id);
    return a;
  }

  getAcceleratorByRp(rpUuid: string): AcceleratorView | undefined {
    const id = this.model.byRp.get(rpUuid);
    return id ? this.model.accelerators.get(id) : undefined;
  }

  attachHandle(acceleratorId: string, handleUuid: string): AttachHandleT | undefined {
    const a = this.model.accelerators.get(acceleratorId);
    if (!a) return undefined;
    const devices = this.model.inventories.get(a.host) ?? [];
    for (const d of devices) for (const dep of d.deployables) if (dep.uuid === acceleratorId) return dep.attachHandles.find((h) => h.uuid === handleUuid);
    return undefined;
  }

  listArqs(filter: ArqFilter = {}): ArqView[] {
    // An ARQ whose delete was acknowledged is not the instance's any more (as the conductor lists).
    return [...this.model.arqs.values()].filter(
      (a) =>
        (filter.instanceUuid === undefined || (a.binding?.instanceUuid === filter.instanceUuid && a.cyborgState !== ArqStates.Deleting)) &&
        (filter.projectId === undefined || a.projectId === filter.projectId),
    );
  }

  getArq(uuid: string): ArqView {
    const a = this.model.arqs.get(uuid);
    if (!a) throw this.missing('arq.not_found', uuid);
    return a;
  }

  docList<T>(collection: string): T[] {
    return [...(this.model.docs.get(collection)?.values() ?? [])] as T[];
  }

  /** A miss is authoritative once the view is complete; before, it is "not yet" (503), never a 404. */
  private missing(code: 'host.not_found' | 'accelerator.not_found' | 'arq.not_found', id: string): Error {
    return this.unseen(id) ?? new NotFoundError(code, id);
  }

  // --- verbs: calls to the conductor, built from the call table -----------------------------

  /** The facade methods of the rows whose `method` is in `group` (undefined: the top-level ones), by their short names. */
  private verbs(group: string | undefined): Record<string, (...a: unknown[]) => Promise<unknown>> {
    const out: Record<string, (...a: unknown[]) => Promise<unknown>> = {};
    for (const [op, row] of controlRows()) {
      if (!row.method) continue;
      const dot = row.method.indexOf('.');
      if ((dot < 0 ? undefined : row.method.slice(0, dot)) !== group) continue;
      out[row.method.slice(dot + 1)] = (...positional) => this.send(op, row, namedArgs(row, positional));
    }
    return out;
  }

  /**
   * One verb: sent to the holder of the host it is about, its answer taken into the read model at
   * once (the row's `echo`) so that the client reads its own write.
   */
  private async send(op: ControlOp, row: ControlRow, args: Record<string, unknown>): Promise<unknown> {
    const host = this.hostFor(row.about?.(args as never));
    try {
      const reply = await this.call(op, args as ArgsOf<ControlOp>, host, row.minTimeoutMs);
      this.echo(row, args, reply);
      return reply;
    } catch (err) {
      return this.underWay(row, args, err);
    }
  }

  private hostFor(about: About | undefined): string | undefined {
    if (!about) return undefined;
    if ('accelerator' in about) return this.getAccelerator(about.accelerator).host;
    if ('host' in about) return this.getHost(about.host).name;
    if ('id' in about) return this.model.accelerators.get(about.id)?.host;
    return about.route;
  }

  private echo(row: ControlRow, args: Record<string, unknown>, reply: unknown): void {
    const e = row.echo;
    if (e === 'accelerator') this.model.putAccelerator(reply as AcceleratorView);
    else if (e === 'arq') {
      const v = reply as ArqView;
      if (v.state === ArqStates.Deleted) this.model.arqs.delete(v.uuid);
      else this.model.arqs.set(v.uuid, v);
    } else if (e === 'retired') this.model.forgetHost(args.host as string);
    else if (typeof e === 'object') {
      const id = (e.id as (a: unknown, r: unknown) => string)(args, reply);
      this.putDocument(e.document, id, (e.body as (a: unknown, r: unknown) => object | null)(args, reply));
    }
  }

  /**
   * A call that outlasted the request timeout while its driver operation goes on (the conductor
   * committed `programming`, `installing`…) is an answer, "accepted", not a failure.
   */
  private async underWay(row: ControlRow, args: Record<string, unknown>, err: unknown): Promise<unknown> {
    // A write with a deadline unanswered in time is `request.outcome_unknown` (control/deadline.ts).
    if (!isCyborgError(err) || (err.code !== 'bus.timeout' && err.code !== 'request.outcome_unknown')) throw err;
    if (row.echo === 'accelerator') {
      const now = this.model.accelerators.get(args.id as string);
      if (now && isBusy(now)) return now;
    }
    if (row.echo === 'driver') {
      const opts = args.opts as { host?: string };
      const now: DriverView | undefined = await Promise.resolve(this.driverAdmin.getDriver(args.ref as string, opts.host)).catch(() => undefined);
      if (now && isBusy(now)) return now;
    }
    throw err;
  }

  /**
   * A call by name; the reply is checked against the call's schema, the conductor's typed errors
   * come back as the same classes. A read that met a conductor losing its lease, or none, is asked
   * once more: it changes nothing, so asking again is safe, and a lease moves within a moment.
   */
  async call<O extends ControlOp>(op: O, args: ArgsOf<O>, host?: string, minTimeoutMs = 0): Promise<ReplyOf<O>> {
    const timeoutMs = Math.max(this.timeoutMs, minTimeoutMs);
    // "503 is true": a write carries the wait (control/deadline.ts).
    const budgetMs = carriesDeadline(ControlCalls[op]) ? budgetFor(timeoutMs) : undefined;
    const ask = (): Promise<ReplyOf<O>> =>
      callConductor(this.bus, Subjects.conductorApi, op, args, { timeoutMs, ...(host ? { host } : {}), ...(budgetMs ? { budgetMs } : {}) });
    try {
      return await ask();
    } catch (err) {
      if (budgetMs) throw outcomeUnknown(err, op, timeoutMs);
      if (!ControlCalls[op].repeatable || !isCyborgError(err) || !MOVING.has(err.code)) throw err;
      await new Promise((r) => setTimeout(r, REPEAT_AFTER_MS));
      return ask();
    }
  }

  /** Applies a document write's outcome to the read model. */
  putDocument(collection: string, id: string, body: object | null): void {
    if (collection === 'device_status') (this.documents as RemoteDocuments).statusGeneration++;
    this.model.putDocument(collection, id, body);
  }
}

/** Documents of the read model; their writes are the table's `documents.…` verbs, assigned by RemoteControlPlane. */
interface RemoteDocuments extends Pick<Documents, 'createProfile' | 'deleteProfile' | 'createAttribute' | 'deleteAttribute' | 'setDeviceStatus'> {}
class RemoteDocuments implements Documents {
  statusGeneration = 0;

  constructor(private readonly cp: RemoteControlPlane) {}

  listProfiles(): DeviceProfileDoc[] {
    return this.cp.docList<DeviceProfileDoc>('device_profiles');
  }

  getProfile(uuid: string): DeviceProfileDoc | undefined {
    return this.listProfiles().find((p) => p.uuid === uuid);
  }

  profileByName(name: string): DeviceProfileDoc | undefined {
    return this.listProfiles().find((p) => p.name === name);
  }

  listAttributes(): AttributeDoc[] {
    return this.cp.docList<AttributeDoc>('attributes');
  }

  getAttribute(uuid: string): AttributeDoc | undefined {
    return this.listAttributes().find((a) => a.uuid === uuid);
  }

  deviceStatus(uuid: string): DeviceStatusDoc['status'] {
    return this.cp.docList<DeviceStatusDoc>('device_status').find((d) => d.uuid === uuid)?.status ?? 'enabled';
  }
}

/**
 * Sends one call on `subject` and checks its reply against the call's schema; a failure comes back
 * as the class it was thrown as. (`forwarded`: conductor to conductor, served where it lands.)
 */
export async function callConductor<O extends ControlOp>(
  bus: Bus,
  subject: string,
  op: O,
  args: ArgsOf<O>,
  o: { timeoutMs: number; host?: string; forwarded?: boolean; caller?: Caller; budgetMs?: number | undefined },
): Promise<ReplyOf<O>> {
  // A verb the protocol this process speaks now does not have: an older peer would not know it.
  const speaks = bus.speaks?.();
  if (speaks !== undefined && sinceOf(op) > speaks) throw protocolTooOld(op, speaks, 'this process speaks');
  // No `caller`: an api process (what every caller but another conductor is).
  const req = {
    op,
    args,
    ...(o.host ? { host: o.host } : {}),
    ...(o.forwarded ? { forwarded: true } : {}),
    ...(o.caller && o.caller !== 'api' ? { caller: o.caller } : {}),
    ...(o.budgetMs ? { budgetMs: o.budgetMs } : {}),
  };
  const reply = await bus.request(subject, ControlRequest, ControlReply, req, { timeoutMs: o.timeoutMs });
  return checkedReply(op, resultOf(reply));
}

/** A control call's result, or its error rebuilt as the class it was thrown as. */
export function resultOf(reply: ControlReplyMsg): unknown {
  if (reply.ok) return reply.result;
  const e = reply.error;
  if (e.state !== undefined && e.allowed !== undefined && (e.code === 'accelerator.transition_invalid' || e.code === 'arq.transition_invalid')) {
    throw new TransitionInvalidError(
      e.code === 'arq.transition_invalid' ? 'arq' : 'accelerator',
      String(e.details.id ?? ''),
      String(e.details.event ?? ''),
      e.state,
      e.allowed,
      typeof e.details.why === 'string' ? e.details.why : undefined,
    );
  }
  if (e.code === 'internal') throw new CyborgError('internal.error', e.message);
  // A code this build does not catalogue (a conductor of another version) still gets a status.
  if (!(e.code in ErrorCodes)) throw new CyborgError('bus.bad_reply', e.message, { ...e.details, remoteCode: e.code });
  throw new CyborgError(e.code as ErrorCode, e.message, e.details);
}
