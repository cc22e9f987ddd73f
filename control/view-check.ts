import type { Logger } from 'pino';
import { bucketDigest, DIGEST_BUCKETS, type StateDigest } from '../model/index.js';
import type { ReadModel } from './read-model.js';

export interface ViewCheckOptions {
  /** The database's digest, asked of a conductor (control call `digest`). */
  fetch(): Promise<StateDigest>;
  /** The view in place now. */
  view(): ReadModel;
  /** Whether the view is loaded and current (no check while it loads or rebuilds). */
  synced(): boolean;
  /** Rebuilds the view from the conductors' snapshots (ViewSync.resync). */
  resync(why: string): void;
  log: Logger;
  /**
   * The least time between two rebuilds for a difference (default 10 min): one a rebuild cannot
   * close (memory and database apart at the conductor) is said, not rebuilt over and over.
   */
  minResyncGapMs?: number;
}

/** The api's view as the database's digest is made (model/digest.ts). */
export function viewDigest(m: ReadModel): StateDigest {
  const accelerators = (function* () {
    for (const a of m.accelerators.values()) yield [a.id, a.state] as const;
  })();
  const arqs = (function* () {
    for (const a of m.arqs.values()) yield [a.uuid, a.state] as const;
  })();
  return { accelerators: bucketDigest(accelerators), arqs: bucketDigest(arqs) };
}

/** The buckets (`a<n>` accelerators, `r<n>` ARQs) where two digests differ. */
function differing(a: StateDigest, b: StateDigest): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < DIGEST_BUCKETS; i++) {
    if (a.accelerators.buckets[i] !== b.accelerators.buckets[i]) out.add(`a${i}`);
    if (a.arqs.buckets[i] !== b.arqs.buckets[i]) out.add(`r${i}`);
  }
  return out;
}

const bucket = (d: StateDigest, key: string): string | undefined => (key[0] === 'a' ? d.accelerators : d.arqs).buckets[Number(key.slice(1))];

/**
 * The background check that the api's view is the database's committed state (issue: a lost
 * views message, a bug in a publisher). Each check compares the database's bucket digests with
 * the view's. A bucket that differs is normal for a moment — a commit whose views message is on
 * its way — so the view is rebuilt only when a bucket differed at the last check too and the
 * view's content of it has not moved since: a difference nothing is on its way to close.
 */
export class ViewCheck {
  private last: { view: StateDigest; differs: Set<string> } | null = null;
  private lastResyncAt = -Infinity;
  checks = 0;
  resyncs = 0;

  constructor(private readonly o: ViewCheckOptions) {}

  async check(): Promise<'equal' | 'differs' | 'resynced' | 'skipped'> {
    if (!this.o.synced()) {
      this.last = null;
      return 'skipped';
    }
    const db = await this.o.fetch();
    if (!this.o.synced()) return 'skipped';
    this.checks++;
    const view = viewDigest(this.o.view());
    const differs = differing(db, view);
    const last = this.last;
    this.last = { view, differs };
    if (differs.size === 0) return 'equal';
    const stable = [...differs].filter((k) => last?.differs.has(k) && bucket(last.view, k) === bucket(view, k));
    if (stable.length === 0) return 'differs';
    const why = `the view differs from the database in ${stable.length} of ${2 * DIGEST_BUCKETS} digest buckets (accelerators ${view.accelerators.count} shown, ${db.accelerators.count} stored; ARQs ${view.arqs.count} shown, ${db.arqs.count} stored)`;
    const facts = {
      buckets: stable,
      view: { accelerators: view.accelerators.count, arqs: view.arqs.count },
      database: { accelerators: db.accelerators.count, arqs: db.arqs.count },
    };
    if (Date.now() - this.lastResyncAt < (this.o.minResyncGapMs ?? 600_000)) {
      this.o.log.warn(facts, `${why}: a rebuild did not close it; not rebuilding again yet (the conductor's memory and its database may be apart)`);
      return 'differs';
    }
    this.last = null;
    this.resyncs++;
    this.lastResyncAt = Date.now();
    this.o.log.warn(facts, `${why}: rebuilding it`);
    this.o.resync(why);
    return 'resynced';
  }
}
