import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { makeDirectory, unusableDirectory } from '../config/index.js';
import { lockDataDir } from './data-lock.js';
import { createDataDir } from './embedded-create.js';
import { embeddedOptions } from './embedded-settings.js';

/** An embedded PostgreSQL (PGlite, WASM) served on a local socket, its data in a directory. */
export interface EmbeddedDatabase {
  /** postgres://… for the ORM: the same driver and dialect as a real server. */
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** A TCP port nobody listens on now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

/**
 * Starts PGlite with its data under `<dataDir>/pgdata` and serves it on 127.0.0.1 through
 * `@electric-sql/pglite-socket`. Why PGlite rather than SQLite: the conductor keeps one driver
 * and one SQL dialect (the hot path's `unnest` upserts, jsonb) for development and production.
 * PGlite has one backend session, so the ORM must use a pool of one (see `ormConfig`). Its settings
 * are a small database's (db/embedded-settings.ts), and a new directory is a copy of one initdb made in a child process (db/embedded-create.ts).
 * `option` names the data directory's setting as the operator gave it, for the one-line refusals.
 */
export async function startEmbedded(dataDir: string, option = '[DEFAULT] state_path'): Promise<EmbeddedDatabase> {
  const dir = resolve(join(dataDir, 'pgdata'));
  await makeDirectory(dir).catch((err: unknown) => {
    throw unusableDirectory(err, option, resolve(dataDir));
  });
  // Before PGlite opens it: a second process must not write the same files.
  const lock = lockDataDir(resolve(dataDir), option);
  try {
    if (!existsSync(join(dir, 'PG_VERSION'))) await createDataDir(dir);
    const db = await PGlite.create(dir, embeddedOptions());
    const port = await freePort();
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port, maxConnections: 1 });
    await server.start();
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      dataDir: dir,
      stop: async () => {
        await server.stop();
        await db.close();
        lock.release();
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}
