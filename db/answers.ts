/**
 * The answers to commits (resolve or reject), handed out in the order they were queued —
 * the commit order — at most `perTurn` per turn of the event loop.
 *
 * Why in turns: a flush's acks wake its callers, whose work (the next transitions and their
 * commits) runs in microtasks. Hundreds of them at once keep the event loop from reading the
 * database's replies, and every caller ends up waiting on the same next flush: a convoy in which
 * Node idles while PostgreSQL writes, then PostgreSQL idles while Node works. In turns, the next
 * flush already starts with the first callers' commits while later callers still work, and
 * both sides stay busy. The exact number per turn matters little within a few dozen either way.
 */
export class Answers {
  private readonly due: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perTurn = 64) {}

  /** Queues answers behind the ones already queued, and hands out what this turn may. */
  add(answers: (() => void)[]): void {
    for (const a of answers) this.due.push(a);
    this.turn();
  }

  /** Hands out everything now (the journal is closing: nobody is left to wait for). */
  flushAll(): void {
    for (const a of this.due.splice(0)) a();
  }

  private turn(): void {
    if (this.scheduled) return; // a later turn gets to these, in order
    for (const a of this.due.splice(0, this.perTurn)) a();
    if (this.due.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.turn();
    });
  }
}
