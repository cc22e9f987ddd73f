import type { StepSnapshot } from '../runtime/index.js';

/** A request waiting for its accelerator's machine to settle. */
interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The requests waiting for one accelerator's machine to leave its busy state, made on the first
 * wait (most of 100,000 actors never have one). Waiters are plain objects, not closures: tsx
 * (esbuild keepNames) names every `const f = () => …` it creates, a property definition per
 * request on the hot path.
 */
export class SettleWaiters extends Set<Waiter> {
  wait(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.add({ resolve, reject });
    });
  }

  /** Releases the waiters once the machine (`snap`) is not busy, or at once when `failed`. */
  wake(failed: unknown, snap: StepSnapshot | undefined): void {
    if (this.size === 0 || (!failed && snap?.hasTag('busy'))) return;
    this.release(failed);
  }

  /** Resolves every waiter, or rejects each with `failed`. */
  release(failed: unknown): void {
    const waiting = [...this];
    this.clear();
    for (const w of waiting) {
      if (failed) w.reject(failed);
      else w.resolve();
    }
  }
}
