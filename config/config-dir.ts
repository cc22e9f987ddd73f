import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from './errors.js';

/**
 * The files of a `--config-dir` (oslo.config's `cyborg.conf.d/`): its `*.conf` files in the
 * order of their names, read after every `--config-file`, so `20-nats-user.conf` beats
 * `10-common.conf`. Anything else in it is refused rather than passed over: a drop-in saved as
 * `nats.conf.bak` or `nats.cfg` would otherwise be silently not read. Names starting with a dot
 * (an editor's swap file, `.keep`) are left alone.
 */
export function confFilesIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such directory' : code === 'ENOTDIR' ? 'not a directory' : (code ?? (err as Error).message);
    throw new ConfigError(`invalid configuration: --config-dir ${dir}: ${why}`);
  }
  const files: string[] = [];
  for (const name of names.filter((n) => !n.startsWith('.')).sort()) {
    const path = join(dir, name);
    if (!name.endsWith('.conf') || !statSync(path).isFile()) {
      throw new ConfigError(`invalid configuration: --config-dir ${dir}: ${name} is not a *.conf file (only those are read; move it out of the directory)`);
    }
    files.push(path);
  }
  return files;
}
