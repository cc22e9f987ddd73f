/** An actor whose live machine can be put to rest and brought back on its next event. */
export interface Restable {
  /** Stops the live machine if it has been idle since `idleSince` (ms); true once at rest. */
  rest(idleSince: number): boolean;
}

/**
 * Puts idle accelerators to rest: their running machine is dropped and only the record
 * {state, context} is kept; the next event brings the machine back from it. A conductor with
 * 100,000 accelerators, nearly all of them sitting in a stable state, then holds records, not
 * running machines (Akka and Orleans call this passivation): an awake accelerator is an XState
 * actor with its own system and mailbox, a resting one only its record, restored with
 * `createActor(machine, { snapshot })` when it is needed again. One sweeper per conductor, not a
 * timer per actor; it runs only while some actor is awake.
 */
export class Passivation {
  private readonly awake = new Set<Restable>();
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly idleMs: number) {}

  /** `a` has a live machine now. */
  wake(a: Restable): void {
    this.awake.add(a);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), Math.max(50, Math.floor(this.idleMs / 2)));
      this.timer.unref();
    }
  }

  forget(a: Restable): void {
    this.awake.delete(a);
  }

  /** How many actors have a live machine (tests, metrics). */
  get awakeCount(): number {
    return this.awake.size;
  }

  sweep(now = Date.now()): void {
    const idleSince = now - this.idleMs;
    for (const a of this.awake) if (a.rest(idleSince)) this.awake.delete(a);
    if (this.awake.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
