import type { Logger } from 'pino';
import type { ArqHold } from '../../model/index.js';
import { arqTags } from '../../machines/index.js';

/** An attach handle one of this conductor's accelerators holds for an ARQ. */
export interface HeldHandle {
  acceleratorId: string;
  handleUuid: string;
  arqUuid: string;
}

export interface OrphanSweepOptions {
  /** The handles this conductor's accelerators hold for ARQs, as committed. */
  held(): HeldHandle[];
  /** The ARQ home's answer for these ARQs: state and held handle, null for one that is gone. */
  holds(uuids: readonly string[]): Promise<Record<string, ArqHold | null>>;
  /** Detaches the handle (audited as the conductor's own action). */
  release(h: HeldHandle): Promise<void>;
  /** How long a handle must stay orphaned, seen by two sweeps, before it is released. */
  graceMs: number;
  /** ARQs per question to the home. */
  pageSize: number;
  log: Logger;
}

/**
 * Whether `held` is an orphan by the ARQ home's answer: its ARQ is gone, or holds nothing, or
 * holds another handle. Undefined (no answer) is never an orphan: nothing is released on a guess.
 */
export function isOrphan(held: HeldHandle, arq: ArqHold | null | undefined): boolean {
  if (arq === undefined) return false;
  if (arq === null) return true;
  // Taking or giving back its handle: one may rightly be held without being recorded yet.
  if (arqTags(arq.state).includes('in-flight')) return false;
  if (!arq.boundTo) return true;
  return arq.boundTo.acceleratorId !== held.acceleratorId || arq.boundTo.handleUuid !== held.handleUuid;
}

/**
 * Releases attach handles whose ARQ is gone or no longer holds them: what an attach finishing
 * after its ARQ failed and was deleted leaves behind (an agent that comes back late, a conductor
 * that failed over mid-bind). The ARQ home is asked — with several conductors only it knows the
 * ARQs — and a handle is released only when two sweeps at least `graceMs` apart both find it
 * orphaned, so that a bind racing the question is never undone.
 */
export class OrphanSweep {
  /** Handles found orphaned, by key, with when they were first found so. */
  private readonly suspects = new Map<string, number>();
  private running = false;

  constructor(private readonly opts: OrphanSweepOptions) {}

  /** One sweep; returns the handles it released. Overlapping calls make one sweep. */
  async run(now = Date.now()): Promise<HeldHandle[]> {
    if (this.running) return [];
    this.running = true;
    try {
      return await this.sweep(now);
    } finally {
      this.running = false;
    }
  }

  private async sweep(now: number): Promise<HeldHandle[]> {
    const held = this.opts.held();
    const orphaned = new Map<string, HeldHandle>();
    for (let i = 0; i < held.length; i += this.opts.pageSize) {
      const page = held.slice(i, i + this.opts.pageSize);
      const answer = await this.opts.holds([...new Set(page.map((h) => h.arqUuid))]);
      for (const h of page) if (isOrphan(h, answer[h.arqUuid])) orphaned.set(keyOf(h), h);
    }
    // A suspect no longer orphaned (bound since, or released by another path) is forgotten.
    for (const key of this.suspects.keys()) if (!orphaned.has(key)) this.suspects.delete(key);
    const released: HeldHandle[] = [];
    for (const [key, h] of orphaned) {
      const since = this.suspects.get(key);
      if (since === undefined) {
        this.suspects.set(key, now);
        continue;
      }
      if (now - since < this.opts.graceMs) continue;
      try {
        await this.opts.release(h);
        this.suspects.delete(key);
        released.push(h);
        this.opts.log.warn(
          { acceleratorId: h.acceleratorId, handleUuid: h.handleUuid, arqUuid: h.arqUuid },
          'released an attach handle whose ARQ is gone or holds it no more',
        );
      } catch (err) {
        // Host away, detach failed: the next sweep tries again.
        this.opts.log.warn({ err, acceleratorId: h.acceleratorId, arqUuid: h.arqUuid }, 'could not release an orphaned attach handle yet');
      }
    }
    return released;
  }
}

function keyOf(h: HeldHandle): string {
  return `${h.acceleratorId}/${h.handleUuid}/${h.arqUuid}`;
}
