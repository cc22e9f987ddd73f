export interface EventuallyOptions {
  /** What the test waits for, as the failure message says it: "timed out waiting for <what>". */
  what: string;
  /** How long before giving up; generous, since only a failing test ever waits this long. */
  timeoutMs?: number;
  /** The pause between two checks. */
  intervalMs?: number;
}

/**
 * Checks `check` until it returns a truthy value, and returns that value: a test waits for what
 * it expects to see, never for a fixed time. A check that throws counts as "not yet"; if the
 * deadline passes, the failure says what was awaited and the last error seen.
 */
export async function eventually<T>(check: () => T | Promise<T>, { what, timeoutMs = 30_000, intervalMs = 20 }: EventuallyOptions): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`, { cause: last });
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
