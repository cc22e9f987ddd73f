// Rewrites README.md's configuration table from the schema (config/options.ts, config/schema.ts).
// config/readme.test.ts fails while the README's table differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import { withConfigTable } from '../config/sample.js';

const path = new URL('../README.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = withConfigTable(before);
if (after !== before) writeFileSync(path, after);
process.stdout.write(after === before ? 'README.md: configuration table up to date\n' : 'README.md: configuration table rewritten\n');
