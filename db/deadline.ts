import type { Logger } from 'pino';
import type { CallDeadline, Change } from '../actors/runtime/index.js';
import { CyborgError } from '../errors/index.js';
import type { Pending } from './journal-types.js';

/**
 * "503 is true": the journal's side of a call's deadline (actors/runtime/call-deadline.ts).
 *
 * A call's caller waits a bounded time; what the journal writes of it after that would be a change
 * its client was told was not made. So when a call's deadline passes, every commit of it that is
 * known not to be in the database (queued, deferred, in a flush not yet sent, between retries:
 * the lifecycle's `DROP`) is dropped and answered `persistence.deadline_passed`, and a commit the
 * call makes after it is refused before it is queued. With them go the later commits, of any
 * caller, that change the same records: the database must never hold a change built on one that
 * was left out. A commit whose statement is already on the wire is not touched (it may have
 * landed); its call is answered by the caller's own timeout, which never says 503 for it.
 */
export class Deadlines {
  constructor(
    private readonly log: Logger,
    /** The journal's `drop`: answers `err` to the droppable commits `which` picks, in commit order. */
    private readonly drop: (which: (p: Pending) => boolean, err: CyborgError) => number,
  ) {}

  /** A commit made now for `call`: refused when its deadline has already passed, else its deadline watched. */
  admit(call: CallDeadline | undefined): CyborgError | undefined {
    if (!call) return undefined;
    if (call.expired || call.at <= Date.now()) {
      call.expired = true;
      this.log.warn({ lateByMs: Date.now() - call.at }, "a commit came after its call's deadline: refused, not written");
      return passed();
    }
    call.timer ??= setTimeout(() => this.expire(call), call.at - Date.now()).unref();
    return undefined;
  }

  /** The call's deadline passed: its waiting commits, and those built on them, are left out. */
  private expire(call: CallDeadline): void {
    if (!call.open) return;
    call.expired = true;
    const touched = new Set<string>();
    const n = this.drop((p) => {
      const keys = p.changes.map(recordOf).filter((k): k is string => k !== undefined);
      if (p.call !== call && !keys.some((k) => touched.has(k))) return false;
      for (const k of keys) touched.add(k);
      return true;
    }, passed());
    if (n > 0)
      this.log.warn(
        { commits: n, records: [...touched].slice(0, 20) },
        "commits dropped: their call's deadline passed before the database took them (answered 503, never written)",
      );
  }
}

function passed(): CyborgError {
  return new CyborgError(
    'persistence.deadline_passed',
    'the database did not take the change before the request had to be answered; the change was not made: send it again once the service is ready',
    { retryAfterS: 1 },
  );
}

/** The record a change writes, as one key (transitions go with the record they are of). */
function recordOf(c: Change): string | undefined {
  switch (c.type) {
    case 'host':
    case 'inventory':
      return `host:${c.host}`;
    case 'accelerator':
      return `acc:${c.id}`;
    case 'arq':
      return `arq:${c.uuid}`;
    case 'document':
      return `doc:${c.collection}/${c.id}`;
    case 'transition':
      return undefined;
  }
}
