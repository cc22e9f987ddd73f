import { hostContextOf, type AcceleratorContext, type ArqContext, type HostContext } from '../../machines/index.js';
import { decodeCursor, encodeCursor, type AuditEntry, type AuditPage, type AuditQuery, type DeviceT, type TransitionRecord } from '../../model/index.js';

/** The persisted form of a machine: plain state name and context, nothing else. */
export interface MachineRecord<C = Record<string, unknown>> {
  value: string;
  context: C;
}

export type HostRecord = MachineRecord<HostContext>;
export type AcceleratorRecord = MachineRecord<AcceleratorContext>;
/** The machine keeps no clock: its actor stamps the ARQ's creation time into the record it commits. */
export type ArqRecord = MachineRecord<ArqContext & { createdAt?: string }>;

/** A change an actor hands to persistence. Several changes of one commit are one transaction. */
export type Change =
  | { type: 'host'; host: string; record: HostRecord; drivers: { name: string; version: string }[] }
  | { type: 'inventory'; host: string; devices: DeviceT[] }
  | { type: 'accelerator'; id: string; host: string; record: AcceleratorRecord }
  | { type: 'arq'; uuid: string; record: ArqRecord; deleted: boolean }
  | { type: 'transition'; record: TransitionRecord }
  | { type: 'document'; collection: string; id: string; body: Record<string, unknown> | null };

/** Everything needed to rebuild the actor tree after a restart. */
export interface Recovered {
  hosts: { host: string; record: HostRecord; drivers: { name: string; version: string }[]; devices: DeviceT[] }[];
  accelerators: { id: string; host: string; record: AcceleratorRecord }[];
  arqs: { uuid: string; record: ArqRecord }[];
  documents: { collection: string; id: string; body: Record<string, unknown> }[];
}

/** How a commit may be written. */
export interface CommitOptions {
  /**
   * Nobody is acknowledged on this commit alone: a step on the way to one that will be (a bind's
   * `BindStarted` and the accelerator's `attaching`, written with the `Bound` that answers Nova).
   * The journal may keep it queued until the next commit that is not deferred takes it into the
   * same transaction — or, if none comes, for a short while at most — instead of paying a
   * transaction for it alone. Order is kept as for any commit. An empty commit (a barrier)
   * writes whatever is deferred now.
   */
  defer?: boolean;
  /**
   * Never dropped for an outage or a call's deadline: written whenever the database answers (the
   * journal's close aside). For what the world has already done and the database holds the start
   * of — a driver operation's outcome once its busy step is committed — which going back from
   * would leave a card in `error` for no fault of its own. Whoever awaits it waits for the database.
   */
  untilWritten?: boolean;
}

/**
 * The persistence port of the conductor. `commit` resolves only once the changes are durable:
 * nothing downstream of a transition (reply, event, Placement, Nova) may happen before that.
 * Commits are answered in the order they were made (an actor relies on it: its latest commit
 * settling means every earlier one has).
 */
export interface Journal {
  commit(changes: Change[], opts?: CommitOptions): Promise<void>;
  load(): Promise<Recovered>;
  /** Only these hosts (with their accelerators' records): what a takeover of some hosts reads. */
  loadHosts?(hosts: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>>;
  /** Only the ARQs: what a conductor that becomes the ARQ home reads (see arq-home.ts). */
  loadArqs?(): Promise<Recovered['arqs']>;
  /** Only the documents: read with the ARQs by a new ARQ home. */
  loadDocuments?(): Promise<Recovered['documents']>;
  /** The transition log of one accelerator / ARQ / host, oldest first, at most `limit` (newest kept). */
  history(id: string, limit: number): Promise<TransitionRecord[]>;
  /** The whole log filtered, newest first, in pages (model/audit.ts); absent where none is kept. */
  audit?(q: AuditQuery): Promise<AuditPage>;
  /**
   * Forgets a retired host: its record, drivers, inventory and accelerators' records, after
   * everything committed before is written. Its transition log stays (the audit outlives it).
   */
  forgetHost?(host: string): Promise<void>;
  /**
   * Every committed accelerator's and ARQ's machine state (id, state), read from the database:
   * what the api's view is compared with (model/digest.ts). Absent where nothing is stored apart.
   */
  committedStates?(): Promise<{ accelerators: [string, string][]; arqs: [string, string][] }>;
  /** Flushes what is queued, then releases the connection. */
  close(): Promise<void>;
  /**
   * Set by the conductor: changes whose commit was answered `persistence.unavailable` (503, "not
   * made") but that the database had taken after all — a connection broken after the COMMIT went
   * out, found committed when the database came back. Memory takes them from here.
   */
  onLanded?: ((changes: Change[]) => void) | undefined;
}

/**
 * Keeps everything in memory: the zero-dependency journal for unit tests and benchmarks of the
 * runtime alone. It still defers the commit by a microtask, so callers cannot rely on a
 * synchronous commit that a real database would never give them.
 */
export class MemoryJournal implements Journal {
  readonly hosts = new Map<string, Recovered['hosts'][number]>();
  readonly accelerators = new Map<string, Recovered['accelerators'][number]>();
  readonly arqs = new Map<string, Recovered['arqs'][number]>();
  readonly documents = new Map<string, Recovered['documents'][number]>();
  readonly transitions: TransitionRecord[] = [];
  commits = 0;

  async commit(changes: Change[], _opts?: CommitOptions): Promise<void> {
    await Promise.resolve();
    this.commits++;
    for (const c of changes) this.apply(c);
  }

  async forgetHost(host: string): Promise<void> {
    await Promise.resolve();
    this.hosts.delete(host);
    for (const [id, a] of this.accelerators) if (a.host === host) this.accelerators.delete(id);
  }

  private apply(c: Change): void {
    switch (c.type) {
      case 'host': {
        const prev = this.hosts.get(c.host);
        this.hosts.set(c.host, { host: c.host, record: c.record, drivers: c.drivers, devices: prev?.devices ?? [] });
        break;
      }
      case 'inventory': {
        const prev = this.hosts.get(c.host);
        // No host record yet: a fresh host's, until the host's own change comes.
        const record = prev?.record ?? { value: 'online', context: hostContextOf(c.host) };
        this.hosts.set(c.host, { host: c.host, record, drivers: prev?.drivers ?? [], devices: c.devices });
        break;
      }
      case 'accelerator':
        this.accelerators.set(c.id, { id: c.id, host: c.host, record: c.record });
        break;
      case 'arq':
        if (c.deleted) this.arqs.delete(c.uuid);
        else this.arqs.set(c.uuid, { uuid: c.uuid, record: c.record });
        break;
      case 'transition':
        this.transitions.push(c.record);
        break;
      case 'document': {
        const key = `${c.collection}/${c.id}`;
        if (c.body === null) this.documents.delete(key);
        else this.documents.set(key, { collection: c.collection, id: c.id, body: c.body });
        break;
      }
    }
  }

  async load(): Promise<Recovered> {
    return structuredClone({
      hosts: [...this.hosts.values()],
      accelerators: [...this.accelerators.values()],
      arqs: [...this.arqs.values()],
      documents: [...this.documents.values()],
    });
  }

  async loadArqs(): Promise<Recovered['arqs']> {
    return structuredClone([...this.arqs.values()]);
  }

  async loadDocuments(): Promise<Recovered['documents']> {
    return structuredClone([...this.documents.values()]);
  }

  async loadHosts(hosts: string[]): Promise<Pick<Recovered, 'hosts' | 'accelerators'>> {
    const wanted = new Set(hosts);
    return structuredClone({
      hosts: [...this.hosts.values()].filter((h) => wanted.has(h.host)),
      accelerators: [...this.accelerators.values()].filter((a) => wanted.has(a.host)),
    });
  }

  async history(id: string, limit: number): Promise<TransitionRecord[]> {
    return this.transitions.filter((t) => t.id === id).slice(-limit);
  }

  async committedStates(): Promise<{ accelerators: [string, string][]; arqs: [string, string][] }> {
    await Promise.resolve();
    return {
      accelerators: [...this.accelerators.values()].map((a) => [a.id, a.record.value]),
      arqs: [...this.arqs.values()].map((a) => [a.uuid, a.record.value]),
    };
  }

  async audit(q: AuditQuery): Promise<AuditPage> {
    const c = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    const since = q.since === undefined ? -Infinity : Date.parse(q.since);
    const until = q.until === undefined ? Infinity : Date.parse(q.until);
    const key = (at: string, seq: number): [number, number] => [Date.parse(at), seq];
    const before = (a: [number, number], b: [number, number]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
    const rows: AuditEntry[] = this.transitions
      .map((t, i) => ({ seq: i + 1, ...t }))
      .filter(
        (e) =>
          (q.host === undefined || e.host === q.host) &&
          (q.id === undefined || e.id === q.id) &&
          (q.kind === undefined || e.kind === q.kind) &&
          (q.actor === undefined || e.actor === q.actor || e.actorName === q.actor || (e.actor !== undefined && !!q.actorIds?.includes(e.actor))) &&
          (q.projectId === undefined ||
            e.projectId === q.projectId ||
            e.projectName === q.projectId ||
            (e.projectId !== undefined && !!q.projectIds?.includes(e.projectId))) &&
          (q.event === undefined || e.event.toLowerCase() === q.event.toLowerCase()) &&
          Date.parse(e.at) >= since &&
          Date.parse(e.at) < until &&
          (!c || before(key(e.at, e.seq), key(c.at, c.seq))),
      )
      .sort((a, b) => (before(key(a.at, a.seq), key(b.at, b.seq)) ? 1 : -1));
    const entries = rows.slice(0, q.limit);
    const last = entries.at(-1);
    return rows.length > q.limit && last ? { entries, next: encodeCursor(last.at, last.seq) } : { entries };
  }

  async close(): Promise<void> {}
}
