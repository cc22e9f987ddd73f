import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { NatsBus, Subjects, type Bus, type EventKind } from '../bus/index.js';
import { TransitionEvent, type AcceleratorView, type ArqView, type CommittedEvent, type CommittedState } from '../model/index.js';
import { ViewsBatch, type ViewsBatchMsg } from './messages.js';
import { CyborgError } from '../errors/index.js';
import { checkPayload, maxPayloadOf, packBySizes } from './payload.js';
import { ArqStates, NOT_YET } from '../machines/index.js';

/** What the publisher reads of its conductor: committed actors by host, ARQs, and its commit hub. */
export type PublishedConductor = CommittedState;

/** How often a conductor with nothing to publish says its last number anyway (a loss is noticed within it). */
export const VIEWS_BEACON_MS = 2_000;

type Body = Omit<ViewsBatchMsg, 'conductorId' | 'epoch' | 'seq'>;
export type Piece =
  | { k: 'host'; v: ViewsBatchMsg['hosts'][number] }
  | { k: 'accelerator'; v: AcceleratorView }
  | { k: 'arq'; v: ArqView }
  | { k: 'document'; v: ViewsBatchMsg['documents'][number] }
  | { k: 'deleted'; v: string }
  | { k: 'hostDeleted'; v: string }
  | { k: 'transition'; v: CommittedEvent };

/**
 * Publishes what the conductor committed: each transition on `cyborg.events.<kind>`, and the
 * committed views it changed on `cyborg.views` (batched per turn of the event loop, so a burst
 * becomes a few messages while an idle system adds no delay). Every views message is numbered
 * (`epoch`, `seq`) so that a reader notices a gap and resyncs, and weighs less than the server's
 * `max_payload` (a burst is cut into as many messages as it takes; transitions go last, after
 * the views they changed).
 */
export class ViewPublisher {
  /** This incarnation: readers learn it from a snapshot and refuse views of any other. */
  readonly epoch = randomUUID();
  private lastSeq = 0;
  private accelerators = new Map<string, string>();
  private hosts = new Map<string, boolean>();
  private retiredHosts: string[] = [];
  private arqs = new Set<string>();
  private docs: ViewsBatchMsg['documents'] = [];
  private transitions: CommittedEvent[] = [];
  /** Each transition's JSON as it was published on its own (over NATS), for the views message. */
  private transitionTexts = new Map<CommittedEvent, string>();
  private scheduled = false;
  private sentSinceBeacon = false;
  private readonly off: () => void;
  private readonly beacon: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly conductor: PublishedConductor,
    private readonly conductorId: string,
    private readonly log?: Logger,
    beaconMs = VIEWS_BEACON_MS,
  ) {
    this.off = conductor.hub.subscribe((ev) => this.onCommitted(ev));
    this.beacon = setInterval(() => this.onBeacon(), beaconMs);
    this.beacon.unref();
  }

  /** The number of the last views message sent (a snapshot page carries it). */
  get seq(): number {
    return this.lastSeq;
  }

  /** A host's view (and its inventory) changed without a transition: adoption, re-registration. */
  host(name: string, withInventory = true): void {
    this.hosts.set(name, withInventory || (this.hosts.get(name) ?? false));
    this.schedule();
  }

  /**
   * A host this conductor has just adopted (rebuilt from the database after a claim or a
   * takeover): its view, inventory and every accelerator's view, which no transition will
   * announce — without them a reader that loaded its view before the adoption would lack them.
   */
  adopted(name: string): void {
    this.hosts.set(name, true);
    for (const id of this.conductor.hosts.get(name)?.accelerators.keys() ?? []) this.accelerators.set(id, name);
    this.schedule();
  }

  /** A host this conductor retired: readers forget it (its accelerators' removals came before). */
  retired(name: string): void {
    this.hosts.delete(name);
    for (const [id, host] of this.accelerators) if (host === name) this.accelerators.delete(id);
    this.retiredHosts.push(name);
    this.schedule();
  }

  document(collection: string, id: string, body: object | null): void {
    this.docs.push({ collection, id, body: body as Record<string, unknown> | null });
    this.schedule();
  }

  stop(): void {
    clearInterval(this.beacon);
    this.off();
    this.flush();
  }

  private onCommitted(ev: CommittedEvent): void {
    if (this.bus instanceof NatsBus) {
      // Written once: the same text goes into the views message that carries it (flush).
      const text = JSON.stringify(ev);
      this.bus.publishJson(Subjects.event(kindOf(ev)), text);
      this.transitionTexts.set(ev, text);
    } else this.bus.publish(Subjects.event(kindOf(ev)), TransitionEvent, ev);
    this.transitions.push(ev);
    if (ev.kind === 'accelerator' && ev.host) this.accelerators.set(ev.id, ev.host);
    if (ev.kind === 'arq') this.arqs.add(ev.id);
    if (ev.host) this.hosts.set(ev.host, this.hosts.get(ev.host) ?? ev.from === NOT_YET);
    this.schedule();
  }

  private onBeacon(): void {
    if (!this.sentSinceBeacon) this.send(emptyBody());
    this.sentSinceBeacon = false;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const c = this.conductor;
    const pieces: Piece[] = [];
    for (const [name, inv] of this.hosts) {
      const h = c.hosts.get(name);
      if (h) pieces.push({ k: 'host', v: { view: h.view(), ...(inv ? { inventory: h.inventory() } : {}) } });
    }
    for (const [id, host] of this.accelerators) {
      const a = c.hosts.get(host)?.accelerators.get(id);
      if (a) pieces.push({ k: 'accelerator', v: a.view() });
    }
    for (const id of this.arqs) {
      const a = c.arqs.get(id);
      pieces.push(a && a.state !== ArqStates.Deleted ? { k: 'arq', v: a.view() } : { k: 'deleted', v: id });
    }
    for (const d of this.docs) pieces.push({ k: 'document', v: d });
    for (const name of this.retiredHosts) pieces.push({ k: 'hostDeleted', v: name });
    this.retiredHosts = [];
    for (const t of this.transitions) pieces.push({ k: 'transition', v: t });
    this.accelerators = new Map();
    this.hosts = new Map();
    this.arqs = new Set();
    this.docs = [];
    this.transitions = [];
    const written = this.transitionTexts;
    this.transitionTexts = new Map();
    if (pieces.length === 0) return;
    const max = maxPayloadOf(this.bus);
    // In process nothing limits a message: one, nothing weighed.
    if (!(this.bus instanceof NatsBus) || !Number.isFinite(max)) return this.send(bodyOf(pieces));
    // Over NATS each piece is written once: weighed to pack the groups (half the limit: the
    // envelope and separators come on top), then sent as the text weighed — a storm's views
    // were written three times (weighed, checked whole, published), ~40 KB a message.
    const texts = pieces.map((p) => (p.k === 'transition' ? written.get(p.v) : undefined) ?? JSON.stringify(p.v));
    const sizes = texts.map((t) => Buffer.byteLength(t, 'utf8'));
    for (const group of packBySizes(sizes, max / 2))
      this.sendJson(
        this.bus,
        group.map((i) => pieces[i]!.k),
        group.map((i) => texts[i]!),
        max,
      );
  }

  private send(body: Body): void {
    const msg: ViewsBatchMsg = { conductorId: this.conductorId, epoch: this.epoch, seq: ++this.lastSeq, ...body };
    this.sentSinceBeacon = true;
    try {
      checkPayload(Subjects.views, msg, maxPayloadOf(this.bus));
    } catch (err) {
      this.tooLarge(err, msg.seq);
      return;
    }
    this.bus.publish(Subjects.views, ViewsBatch, msg);
  }

  /** `send` for pieces already written as JSON: the message is put together from their texts. */
  private sendJson(bus: NatsBus, kinds: Piece['k'][], texts: string[], max: number): void {
    const seq = ++this.lastSeq;
    this.sentSinceBeacon = true;
    const json = viewsJson({ conductorId: this.conductorId, epoch: this.epoch, seq }, kinds, texts);
    const size = Buffer.byteLength(json, 'utf8');
    if (size > max) {
      this.tooLarge(
        new CyborgError('bus.payload_too_large', `a message on ${Subjects.views} weighs ${size} bytes, over the server's max_payload of ${max}`, {
          subject: Subjects.views,
          size,
          max,
        }),
        seq,
      );
      return;
    }
    bus.publishJson(Subjects.views, json);
  }

  private tooLarge(err: unknown, seq: number): void {
    // Its number is spent all the same: readers see the gap and rebuild from a snapshot.
    this.log?.error({ err, seq }, 'a views message is too large to publish; readers will resync');
  }
}

/** A views message's JSON from its pieces' texts: what `JSON.stringify` makes of `bodyOf`'s message, keys aside. */
export function viewsJson(head: Pick<ViewsBatchMsg, 'conductorId' | 'epoch' | 'seq'>, kinds: Piece['k'][], texts: string[]): string {
  const by: Record<Piece['k'], string[]> = { host: [], accelerator: [], arq: [], document: [], deleted: [], hostDeleted: [], transition: [] };
  kinds.forEach((k, i) => by[k].push(texts[i]!));
  const list = (k: Piece['k']): string => `[${by[k].join(',')}]`;
  const deleted = by.hostDeleted.length ? `{"arqs":${list('deleted')},"hosts":${list('hostDeleted')}}` : `{"arqs":${list('deleted')}}`;
  return (
    `${JSON.stringify(head).slice(0, -1)},"hosts":${list('host')},"accelerators":${list('accelerator')},"arqs":${list('arq')},` +
    `"documents":${list('document')},"transitions":${list('transition')},"deleted":${deleted}}`
  );
}

function emptyBody(): Body {
  return { hosts: [], accelerators: [], arqs: [], documents: [], transitions: [], deleted: { arqs: [] } };
}

export function bodyOf(group: Piece[]): Body {
  const b = emptyBody();
  for (const p of group) {
    if (p.k === 'host') b.hosts.push(p.v);
    else if (p.k === 'accelerator') b.accelerators.push(p.v);
    else if (p.k === 'arq') b.arqs.push(p.v);
    else if (p.k === 'document') b.documents.push(p.v);
    else if (p.k === 'deleted') b.deleted!.arqs.push(p.v);
    else if (p.k === 'hostDeleted') (b.deleted!.hosts ??= []).push(p.v);
    else b.transitions.push(p.v);
  }
  return b;
}

function kindOf(ev: CommittedEvent): EventKind {
  return ev.kind === 'accelerator' ? 'transition' : ev.kind;
}
