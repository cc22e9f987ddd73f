#!/usr/bin/env node
// The `cyborg` bin: runs the TypeScript entry point through tsx, so a checkout needs no build step.
import { register } from 'tsx/esm/api';

const [major] = process.versions.node.split('.').map(Number);
if (major < 22) {
  process.stderr.write(`cyborg needs Node.js >= 22 (this is ${process.versions.node}); run it through npm/npx in the checkout, which brings Node 24.\n`);
  process.exit(1);
}
register();
const { main } = await import('./main.ts');
main(process.argv);
