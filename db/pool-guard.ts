import type { Pool, PoolClient } from 'pg';
import { CyborgError } from '../errors/index.js';

/**
 * Hands back to the pool a connection that died while checked out. Why: when the database goes
 * away in the middle of a flush, Kysely's controlled transaction (what MikroORM's
 * `transactional` runs on) sends ROLLBACK on the dead connection, that throws, and the
 * connection is never released — one pool slot leaks per outage until flushes wait forever and
 * `orm.close()` hangs (seen in test/persistence/outage.test.ts). Only public `pg` events are
 * used: `acquire` / `release` on the pool and `end` on the client.
 */
export function guardPool(pool: Pool): void {
  const checkedOut = new Set<PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_err, client) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      checkedOut.delete(client);
      const release = client.release;
      // Whoever still holds it will try to release it too; that must be a no-op, not a throw.
      client.release = () => undefined;
      release(new CyborgError('persistence.unavailable', 'connection to the database was lost'));
    });
  });
}
