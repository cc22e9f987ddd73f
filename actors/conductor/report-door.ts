import type { Static, TSchema } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Bus, RequestHandler, SubscribeOptions, Unsubscribe } from '../../bus/index.js';
import type { InventoryMsg } from '../../bus/index.js';
import type { DeviceT } from '../../model/index.js';
import { Subjects } from '../../bus/index.js';
import { CyborgError } from '../../errors/index.js';
import { inventoryIds, inventoryRefusalOf, REFUSAL_REASONS, type Refusal, type RefusalReason } from './report-host.js';

export interface ReportDoorOptions {
  /** Whether a host registered here (this conductor holds it). */
  known: (host: string) => boolean;
  /** The host this conductor holds an id on, in memory: its committed view and what is on its way. */
  heldHere: (id: string) => string | undefined;
  /**
   * The host the database records each of `ids` on — the hosts of every conductor, not only this
   * one's: with several conductors, no one of them holds the whole fleet in memory.
   */
  recorded?: (ids: string[]) => Promise<Map<string, string>>;
  /** What this conductor holds of `host` now: ids already its own need no question to the database. */
  inventoryOf?: (host: string) => readonly DeviceT[] | undefined;
  log: Logger;
}

/** Inventories whose new ids go to the database in one question (each a few dozen ids). */
const ASK_AT_ONCE = 200;

/**
 * The door agents' inventories come through: the conductor owns which host each device is on,
 * and an agent speaks only for its own. A refused inventory is answered with its reason (our
 * words, never the database's), logged, counted by reason, and never reaches the conductor:
 * nothing of it is applied or stored, and no Placement provider is made for it.
 */
export class ReportDoor {
  readonly refused = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>;

  constructor(private readonly opts: ReportDoorOptions) {}

  /** Resolves when the inventory may be believed; throws `request.forbidden` (counted) when not. */
  async admit(msg: InventoryMsg): Promise<void> {
    const local = inventoryRefusalOf(msg.host, msg.devices, this.opts.known, this.opts.heldHere);
    if (local) this.refuse(msg, local);
    // Only ids new to this host are asked of the database: an agent re-sends its whole inventory
    // every discovery round, and a fleet's worth of them must not queue behind the journal's flushes.
    const own = new Set(inventoryIds(this.opts.inventoryOf?.(msg.host) ?? []));
    const recorded = await this.recordedHosts(inventoryIds(msg.devices).filter((id) => !own.has(id)));
    const foreign =
      recorded &&
      inventoryRefusalOf(
        msg.host,
        msg.devices,
        () => true,
        (id) => recorded.get(id),
      );
    if (foreign) this.refuse(msg, foreign);
  }

  /** The bus the conductor is given: its inventory responder behind this door, all else as is. */
  wrap(inner: Bus): Bus {
    return {
      publish: (s, schema, msg) => inner.publish(s, schema, msg),
      subscribe: (s, schema, h, o) => inner.subscribe(s, schema, h, o),
      request: (s, a, b, msg, o) => inner.request(s, a, b, msg, o),
      close: () => inner.close(),
      ...(inner.speaks ? { speaks: () => inner.speaks!() } : {}),
      respond: <Req extends TSchema, Rep extends TSchema>(
        subject: string,
        req: Req,
        rep: Rep,
        handler: RequestHandler<Req, Rep>,
        o?: SubscribeOptions,
      ): Unsubscribe => {
        if (subject !== Subjects.inventory) return inner.respond(subject, req, rep, handler, o);
        return inner.respond(
          subject,
          req,
          rep,
          async (msg: Static<Req>, subj, written) => {
            await this.admit(msg as InventoryMsg);
            return handler(msg, subj, written);
          },
          o,
        );
      },
    };
  }

  /** Questions waiting for the one in flight: asked together when it is answered (see `ask`). */
  private waiting: { ids: string[]; done: (answer: Map<string, string> | Error) => void }[] = [];
  private asking = false;

  private async recordedHosts(ids: string[]): Promise<Map<string, string> | undefined> {
    if (!this.opts.recorded || ids.length === 0) return undefined;
    const answer = await new Promise<Map<string, string> | Error>((done) => {
      this.waiting.push({ ids, done });
      if (!this.asking) void this.ask(this.opts.recorded!);
    });
    if (!(answer instanceof Error)) return answer;
    // The database away: the conductor's own check (its memory) still stands, and nothing of
    // the inventory is stored before the database is back to refuse a duplicate.
    this.opts.log.warn({ err: answer }, "could not read which hosts hold an inventory's ids; checked against memory only");
    return undefined;
  }

  /**
   * One query at a time, for every inventory that arrived meanwhile (group-commit style): a
   * fleet registering at once costs a few round trips to the database, not one per host, and
   * leaves the journal's flushes their connections.
   */
  private async ask(recorded: (ids: string[]) => Promise<Map<string, string>>): Promise<void> {
    this.asking = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, ASK_AT_ONCE);
        // untyped: whatever the lookup threw, as an Error for the waiting reports; each answers it through publicMessage.
        const answer = await recorded(batch.flatMap((b) => b.ids)).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
        for (const b of batch) b.done(answer);
      }
    } finally {
      this.asking = false;
    }
  }

  private refuse(msg: InventoryMsg, r: Refusal): never {
    this.refused[r.reason]++;
    this.opts.log.warn({ host: msg.host, agentId: msg.agentId, reason: r.reason, why: r.why }, 'refused an inventory');
    throw new CyborgError('request.forbidden', `inventory refused: ${r.why}`, { host: msg.host, reason: r.reason });
  }
}
