#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=16
// The `cyborg` bin. Installed from the package (`npm pack`, then `npm install -g`; README,
// "Production install") it runs the compiled JavaScript under dist/ and needs no dev dependency. Where tsx is installed (a
// checkout) it runs the TypeScript itself, so development needs no build step and never runs a
// stale dist/ (`node dist/cli/main.js` runs the build there).
// --max-semi-space-size=16 (MiB): Node 24 lets the young generation grow to 2 x 64 MiB, and after a
// registration burst a conductor keeps that and a fragmented old space resident. Capped, a large
// conductor's RSS stays well under its memory target, for a little more steady CPU in scavenges.
// MALLOC_MMAP_THRESHOLD_=131072 holds glibc's mmap threshold at its default: the all-in-one's
// PGlite makes V8 compile PostgreSQL's parser once with ~600 MiB of scratch, after which glibc's
// raised threshold keeps 70-120 MiB of freed blocks resident all day (docs/persistence.md). A role
// on PostgreSQL runs no PGlite; to it the setting changes nothing measurable.
// Run `node cli/bin.js …` to choose other V8 flags.
import { existsSync, readFileSync } from 'node:fs';

const [major] = process.versions.node.split('.').map(Number);
// The version is read before the Node check: it needs nothing of the program, and an operator
// asking which cyborg is installed should get the answer on any Node.
if (process.argv.length === 3 && ['--version', '-V'].includes(process.argv[2])) {
  process.stdout.write(`${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`);
  process.exit(0);
}
if (major < 22) {
  process.stderr.write(`cyborg needs Node.js >= 22 and \`node\` here is ${process.versions.node} (${process.execPath}): put Node.js 22 or later first on the PATH (in a checkout, npm run / npx bring Node 24)\n`);
  process.exit(1);
}
const built = new URL('../dist/cli/main.js', import.meta.url);
const tsx = (() => {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return undefined;
  }
})();
let main;
if (existsSync(built) && !tsx) {
  ({ main } = await import(built.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('./main.ts'));
}
main(process.argv);
