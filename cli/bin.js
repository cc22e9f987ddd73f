#!/usr/bin/env -S node --max-semi-space-size=16
// The `cyborg` bin: runs the TypeScript entry point through tsx, so a checkout needs no build step.
// --max-semi-space-size=16 (MiB): Node 24 lets the young generation grow to 2 x 64 MiB, and after a
// registration burst a conductor keeps that and a fragmented old space resident. Capped, a large
// conductor's RSS stays well under its memory target, for a little more steady CPU in scavenges.
// Run `node cli/bin.js …` to choose other V8 flags.
import { register } from 'tsx/esm/api';

const [major] = process.versions.node.split('.').map(Number);
if (major < 22) {
  process.stderr.write(`cyborg needs Node.js >= 22 (this is ${process.versions.node}); run it through npm/npx in the checkout, which brings Node 24.\n`);
  process.exit(1);
}
register();
const { main } = await import('./main.ts');
main(process.argv);
