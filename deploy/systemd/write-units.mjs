// The package's `postinstall`: writes this install's paths into the systemd units beside this
// file, so that the units an operator copies to /etc/systemd/system run the Node the install ran
// under (the one `--engine-strict` checked) by its absolute path, and name the README where the
// install put it. The committed units run `/opt/cyborg/bin/cyborg`, whose `#!/usr/bin/env node`
// finds the first `node` on systemd's PATH: Debian's v20 on a controller, refused every 2 s
// (issue 42). Plain JavaScript for any Node npm runs: it runs before anything is built or checked.
//
// In a checkout (`npm install` in a clone) it changes nothing: the committed units are sources.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');

if (existsSync(join(root, '.git')) || !existsSync(join(root, 'cli', 'bin.js'))) process.exit(0);

// npm names the Node it runs under; a script run by hand (`node write-units.mjs`) uses its own.
const node = process.env.npm_node_execpath || process.execPath;
const bin = join(root, 'cli', 'bin.js');
for (const file of readdirSync(here).filter((f) => /^cyborg-.*\.service$/.test(f))) {
  const path = join(here, file);
  const text = readFileSync(path, 'utf8')
    // The bin's own V8 flag (cli/bin.js's shebang) goes with it: the unit runs node, not the shebang.
    .replace(/^ExecStart=\S+\/bin\/cyborg /m, `ExecStart=${node} --max-semi-space-size=16 ${bin} `)
    .replace(/^Documentation=file:\/\/\S+$/m, `Documentation=file://${join(root, 'README.md')}`);
  writeFileSync(path, text);
}
