import type { Logger } from 'pino';
import { CyborgError } from '../../errors/index.js';
import type { AcceleratorView, RelayoutRequest, RequestMeta } from '../../model/index.js';
import type { Journal } from '../runtime/index.js';
import type { PlacementPort } from '../services/index.js';
import type { FleetReads } from './fleet-reads.js';
import { retireHost, type ForgettingJournal, type RetiredHost, type RetireTarget } from './host-retire.js';
import { relayout } from './relayout.js';
import type { Supervisor } from './supervisor.js';

export interface HostDeskOptions {
  tree: Supervisor;
  reads: FleetReads;
  journal: Journal;
  log: Logger;
  placement?: PlacementPort;
  /** What a retirement removes the host's accelerators and forgets the host through: the conductor's facade. */
  target: RetireTarget;
}

/**
 * The conductor's host writes, as an operator asks them (the call table's `hosts.…` rows): a
 * card's re-layout, and the retirement of a lost, empty host, which api processes learn of from
 * the views messages (`onRetired`).
 */
export class HostDesk {
  private readonly retiredListeners = new Set<(host: string) => void>();

  constructor(private readonly o: HostDeskOptions) {}

  /** Re-lays out one card of a host (relayout.ts); answers the host's accelerators once reported anew. */
  relayout(host: string, req: RelayoutRequest, meta: RequestMeta = {}): Promise<AcceleratorView[]> {
    this.o.tree.assertRunning();
    return relayout(this.o.reads.host(host), req, meta, { journal: this.o.journal, allocations: this.o.placement?.allocations ?? null });
  }

  /** Retires a lost host that holds nothing (host-retire.ts); the journal must forget hosts. */
  async retire(host: string, meta: RequestMeta = {}): Promise<RetiredHost> {
    this.o.tree.assertRunning();
    const journal = this.o.journal;
    if (!journal.forgetHost) throw new CyborgError('persistence.unavailable', "this conductor's journal cannot forget a host");
    const retired = await retireHost(this.o.target, journal as ForgettingJournal, host, meta, this.o.log);
    // The compute node's provider Cyborg made for it (no Nova) would be left in Placement for good.
    await this.o.placement?.forgetHost?.(host).catch((err: unknown) => {
      this.o.log.warn(
        { err, host },
        'host delete: could not delete the root resource provider created for it; delete it by hand (openstack resource provider delete)',
      );
    });
    for (const l of this.retiredListeners) l(host);
    return retired;
  }

  onRetired(listener: (host: string) => void): () => void {
    this.retiredListeners.add(listener);
    return () => this.retiredListeners.delete(listener);
  }
}
