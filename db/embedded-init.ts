/**
 * Creates an embedded database's data directory, in a process of its own, then exits.
 *
 * PGlite's initdb runs two more PostgreSQL instances in WebAssembly beside the one that serves
 * (the initdb program and a bootstrap backend); their compiled code and memory stay resident in
 * the process that ran them, about 300 MiB that a fresh all-in-one would carry all day. Run here,
 * they go back to the system when this process exits (db/embedded-create.ts spawns it,
 * with the pgdata directory as its one argument).
 */
import { PGlite } from '@electric-sql/pglite';
import { embeddedOptions } from './embedded-settings.js';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: embedded-init <pgdata dir>\n');
  process.exit(2);
}
const db = await PGlite.create(dir, embeddedOptions());
await db.close();
