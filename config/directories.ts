import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

const isDirectory = (path: string): Promise<boolean> =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

/**
 * `mkdir -p`, one directory at a time from the nearest one that exists: the first that cannot be
 * made fails at once with its own error (`unusableDirectory` words it). Node's own recursive
 * mkdir never settles under /proc (mkdir answers ENOENT, its parent exists, and it tries again:
 * ~800 times in 5 s, the all-in-one hanging silently; issue 42).
 */
export async function makeDirectory(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = resolve(dir); !(await isDirectory(at)); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const d of missing) {
    await mkdir(d).catch(async (err: unknown) => {
      // Made meanwhile by another process (two roles of one host starting together): fine.
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EEXIST' && (await isDirectory(d))) return;
      // A file where a directory must be: what a recursive mkdir says of it (ENOTDIR), whichever
      // level it is at, so that the start-up line names it the same way.
      if (e.code === 'EEXIST') e.code = 'ENOTDIR';
      throw e;
    });
  }
}
