import type { Logger } from 'pino';
import type { Claim } from './lease.js';
import { Collections } from '../services/index.js';
import type { Recovered } from '../runtime/index.js';

/**
 * The lease name of the ARQ home: ARQs are not host-bound, so with several conductors exactly
 * one of them — whoever holds this lease, like a host's — keeps every ARQ actor, serves every
 * ARQ call (the others forward them) and alone may write ARQs (FencedJournal). The same holds
 * for the documents Nova and operators write (`HOME_COLLECTIONS`): a device profile's name must
 * be unique across conductors, and a delete must reach the copy that exists. A name no host can
 * have: hostnames never start with '#'.
 */
export const ARQ_HOME = '#arqs';

/** Document collections written only by the ARQ home. */
export const HOME_COLLECTIONS: ReadonlySet<string> = new Set([Collections.deviceProfiles, Collections.attributes, Collections.deviceStatus]);

/** What the ARQ home holds in memory, as committed. */
export type HomeState = Pick<Recovered, 'arqs' | 'documents'>;

export interface ArqHomeOptions {
  conductorId: string;
  lease: { owns(host: string): boolean; claim(host: string): Promise<Claim> };
  /** The ARQs and documents as committed: read afresh whenever this conductor becomes the home. */
  load: () => Promise<HomeState>;
  /** Replaces this conductor's ARQ actors and home documents with these. */
  adopt: (state: HomeState) => void;
  /** Drops this conductor's ARQ actors (the home moved away). */
  drop: () => void;
  /** Without `conductorId`: the home binds it on every line of its own. */
  log: Logger;
}

/**
 * Where ARQ calls are served. The home is claimed on the first ARQ call that finds none (or
 * whose holder's lease expired), and on each claim the ARQs are read from the database: another
 * conductor may have changed them since this one last held them.
 */
export class ArqHome {
  private adopted = false;
  private claiming: Promise<string> | null = null;

  /** `conductorId` bound here, whoever built it: pino repeats a key that a binding and a call both carry. */
  private readonly log: Logger;

  constructor(private readonly opts: ArqHomeOptions) {
    this.log = opts.log.child({ conductorId: opts.conductorId });
  }

  /** The id of the conductor that serves ARQ calls now — this one once it has loaded them. */
  async where(): Promise<string> {
    if (this.adopted && this.opts.lease.owns(ARQ_HOME)) return this.opts.conductorId;
    // One claim and one load at a time, whatever the number of calls waiting on them.
    this.claiming ??= this.claim().finally(() => {
      this.claiming = null;
    });
    return this.claiming;
  }

  /** The lease of the home is no longer ours: stop holding ARQs that others now write. */
  lost(): void {
    if (!this.adopted) return;
    this.adopted = false;
    this.opts.drop();
    this.log.warn('no longer the ARQ home: its ARQs are dropped here');
  }

  private async claim(): Promise<string> {
    const c = await this.opts.lease.claim(ARQ_HOME);
    if (!c.mine) {
      if (this.adopted) this.lost();
      return c.owner;
    }
    if (!this.adopted || c.takeover) {
      const state = await this.opts.load();
      this.opts.adopt(state);
      this.adopted = true;
      this.log.info({ arqs: state.arqs.length, documents: state.documents.length, takeover: c.takeover }, 'this conductor is the ARQ home now');
    }
    return this.opts.conductorId;
  }
}
