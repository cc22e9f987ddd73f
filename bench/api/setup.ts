/** What the benches that start a deployment share: the admin database, waiting for pieces to come up. */
import pg from 'pg';

/** The PostgreSQL server's admin database, where a bench creates and drops its own. */
export const PG = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** One statement on the admin database (create or drop a bench's database). */
export async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG, connectionTimeoutMillis: 2_000 });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves with the first answer of `check` that is neither undefined nor false, polled every 200 ms. */
export async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(200)) {
    const v = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (v !== undefined && v !== false) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts something that may be early (an agent before its conductor, an api before the view), undoing a failed try. */
export function startedWhenReady(what: string, thing: { start(): Promise<unknown>; stop(): unknown }): Promise<true> {
  return until(what, async () => {
    try {
      await thing.start();
      return true as const;
    } catch {
      await thing.stop();
      return undefined;
    }
  });
}
