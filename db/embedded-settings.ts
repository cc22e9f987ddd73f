import { PGlite, type PGliteOptions } from '@electric-sql/pglite';

/**
 * PostgreSQL's settings for the all-in-one's embedded database: one session, a few thousand rows.
 * PGlite starts with a server's defaults (shared_buffers 128MB, maintenance_work_mem 64MB,
 * max_connections 100, wal_buffers 4MB), and PostgreSQL touches its shared buffers as pages are
 * read: over a day the WASM memory grows toward all of them. 16MB holds the whole working set of
 * a small site many times over (bench:memory measures the RSS; docs/persistence.md).
 */
export const EMBEDDED_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  wal_buffers: '1MB',
  maintenance_work_mem: '8MB',
  work_mem: '2MB',
  temp_buffers: '1MB',
  // One backend session (single-user mode): the lock and process tables need no room for 100.
  max_connections: '8',
};

/** PGlite's options with those settings, after its own start parameters. */
export function embeddedOptions(): PGliteOptions {
  const settings = Object.entries(EMBEDDED_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  return { startParams: [...PGlite.defaultStartParams, ...settings] };
}
