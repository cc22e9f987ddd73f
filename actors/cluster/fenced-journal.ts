import { CyborgError } from '../../errors/index.js';
import { ARQ_HOME, HOME_COLLECTIONS } from './arq-home.js';
import type { AcceleratorRecord, Change, CommitOptions, Journal, Recovered } from '../runtime/index.js';
import type { AuditPage, AuditQuery, TransitionRecord } from '../../model/index.js';

/** One host as recorded, with its accelerators' records by id: what a takeover rebuilds. */
export interface HostState {
  host: Recovered['hosts'][number];
  records: Map<string, AcceleratorRecord>;
}

/** What the fence asks of the lease table. */
export interface Fence {
  valid(): boolean;
  owns(host: string): boolean;
}

/** The lease a change needs: its host's, or the ARQ home's for an ARQ. */
function hostOf(c: Change): string | undefined {
  switch (c.type) {
    case 'host':
    case 'inventory':
    case 'accelerator':
      return c.host;
    case 'arq':
      return ARQ_HOME;
    case 'transition':
      // A driver's steps are logged by whichever conductor the operator's call reached, as its record is written.
      return c.record.kind === 'arq' ? ARQ_HOME : c.record.kind === 'driver' ? undefined : c.record.host;
    case 'document':
      return HOME_COLLECTIONS.has(c.collection) ? ARQ_HOME : undefined;
    default:
      return undefined;
  }
}

/**
 * A Journal decorator that refuses writes a conductor may no longer make: any write once its own
 * lease has lapsed, and a host's writes unless it holds that host's lease. The conductor keeps
 * working against the Journal port unchanged; what it cannot write it cannot acknowledge.
 *
 * `load()` hands the conductor only the documents and keeps the hosts aside: they are adopted
 * one by one as their leases are taken (see HostRouter); ARQs are read by the conductor that
 * takes the ARQ home's lease (see ArqHome).
 */
export class FencedJournal implements Journal {
  /** The start-time snapshot of host-owned state, by host; entries leave as their hosts are adopted. */
  private startup = new Map<string, { host: Recovered['hosts'][number]; accelerators: Recovered['accelerators'] }>();

  constructor(
    readonly inner: Journal,
    private readonly fence: Fence,
  ) {}

  get onLanded(): Journal['onLanded'] {
    return this.inner.onLanded;
  }

  set onLanded(take: Journal['onLanded']) {
    this.inner.onLanded = take;
  }

  commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    const answer = this.fenced(changes, opts);
    // Marked handled, as the inner journal's own answer is: a caller that drops its commit's
    // promise (a system transition nobody awaits) must not end the process on a 503.
    answer.catch(() => undefined);
    return answer;
  }

  private async fenced(changes: Change[], opts?: CommitOptions): Promise<void> {
    if (!this.fence.valid()) throw new CyborgError('lease.lost', "this conductor's lease has lapsed; it may not write");
    for (const c of changes) {
      const host = hostOf(c);
      if (host !== undefined && !this.fence.owns(host)) {
        throw new CyborgError('lease.not_owner', `this conductor does not hold the lease of host ${host}`, { host });
      }
    }
    return this.inner.commit(changes, opts);
  }

  /** The database's committed states: a read, allowed without a lease. */
  committedStates(): ReturnType<NonNullable<Journal['committedStates']>> {
    if (!this.inner.committedStates) throw new CyborgError('persistence.unavailable', 'this journal keeps no committed states apart');
    return this.inner.committedStates();
  }

  /** Only the holder of the host's lease forgets it (a retired host: actors/conductor/host-retire.ts). */
  async forgetHost(host: string): Promise<void> {
    if (!this.fence.valid()) throw new CyborgError('lease.lost', "this conductor's lease has lapsed; it may not write");
    if (!this.fence.owns(host)) throw new CyborgError('lease.not_owner', `this conductor does not hold the lease of host ${host}`, { host });
    if (!this.inner.forgetHost) throw new CyborgError('persistence.unavailable', 'this journal cannot forget a host');
    return this.inner.forgetHost(host);
  }

  async load(): Promise<Recovered> {
    const all = await this.inner.load();
    this.startup = index(all);
    return { hosts: [], accelerators: [], arqs: [], documents: all.documents };
  }

  async loadArqs(): Promise<Recovered['arqs']> {
    if (this.inner.loadArqs) return this.inner.loadArqs();
    return (await this.inner.load()).arqs;
  }

  async loadDocuments(): Promise<Recovered['documents']> {
    if (this.inner.loadDocuments) return this.inner.loadDocuments();
    return (await this.inner.load()).documents;
  }

  /** Hosts recorded in the database at start that this conductor has not adopted (yet, or ever: another's). */
  unadopted(): string[] {
    return [...this.startup.keys()];
  }

  /**
   * The recorded state of some hosts, each with its accelerators' records: from the start-time
   * snapshot when `fresh` is false (a host nobody owned before), else read anew (a takeover: the
   * previous owner wrote since we started).
   */
  async hostsState(hosts: string[], fresh: boolean): Promise<HostState[]> {
    const src = fresh ? index(await (this.inner.loadHosts ? this.inner.loadHosts(hosts) : this.inner.load())) : this.startup;
    const out: HostState[] = [];
    for (const h of hosts) {
      const s = src.get(h);
      this.startup.delete(h);
      if (s) out.push({ host: s.host, records: new Map(s.accelerators.map((a) => [a.id, a.record])) });
    }
    return out;
  }

  history(id: string, limit: number): Promise<TransitionRecord[]> {
    return this.inner.history(id, limit);
  }

  /** Reads need no lease: the log is the cluster's, whoever wrote each row. */
  audit(q: AuditQuery): Promise<AuditPage> {
    if (!this.inner.audit) throw new CyborgError('persistence.unavailable', 'this conductor keeps no audit log');
    return this.inner.audit(q);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

function index(r: Pick<Recovered, 'hosts' | 'accelerators'>): Map<string, { host: Recovered['hosts'][number]; accelerators: Recovered['accelerators'] }> {
  const m = new Map<string, { host: Recovered['hosts'][number]; accelerators: Recovered['accelerators'] }>();
  for (const h of r.hosts) m.set(h.host, { host: h, accelerators: [] });
  for (const a of r.accelerators) m.get(a.host)?.accelerators.push(a);
  return m;
}
