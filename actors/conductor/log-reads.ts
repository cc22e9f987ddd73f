import { CyborgError } from '../../errors/index.js';
import { bucketDigest, type AuditPage, type AuditQuery, type StateDigest, type TransitionRecord } from '../../model/index.js';
import type { Journal } from '../runtime/index.js';

/**
 * The conductor's reads of its database (the call table's `log.…` rows): the transition log of
 * one object, the fleet's audit, and the digest of the committed states an api checks its view
 * with. Unlike FleetReads, each of these waits for the database.
 */
export class LogReads {
  constructor(private readonly journal: Journal) {}

  /** The committed transition log of one accelerator, ARQ or host (oldest first). */
  history(id: string, limit = 200): Promise<TransitionRecord[]> {
    return this.journal.history(id, limit);
  }

  /** The fleet's audit log, filtered and paged, from the journal's database. */
  audit(q: AuditQuery): Promise<AuditPage> {
    if (!this.journal.audit) throw new CyborgError('persistence.unavailable', 'this conductor keeps no audit log');
    return this.journal.audit(q);
  }

  /** The database's committed states as digests (model/digest.ts): what an api compares its view with. */
  async stateDigest(): Promise<StateDigest> {
    if (!this.journal.committedStates) throw new CyborgError('persistence.unavailable', "this conductor's journal keeps no committed states apart");
    const { accelerators, arqs } = await this.journal.committedStates();
    return { accelerators: bucketDigest(accelerators), arqs: bucketDigest(arqs) };
  }
}
