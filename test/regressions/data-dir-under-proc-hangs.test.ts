/**
 * Issue 42: a data directory under /proc hung the all-in-one silently: Node's recursive mkdir got
 * ENOENT, found the parent there, and tried again (~800 times in 5 s), for ever. Now each missing
 * directory is made on its own, and the first that cannot be is the one line of a bad value, exit 1.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDirectory } from '../../config/index.js';
import { cyborgProcess } from '../cli/spawn.js';

describe('a data directory that cannot be made', () => {
  it('under /proc: the all-in-one says so in one line and exits 1, at once', async () => {
    const dir = `/proc/cyborg-${process.pid}/state`;
    const started = Date.now();
    const r = await cyborgProcess(['all-in-one', '--port', '0'], { env: { CYBORG_DATA_DIR: dir }, timeoutMs: 30_000 });
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe(
      `cyborg: environment variable CYBORG_DATA_DIR = ${dir}: no directory can be created there (a file system such as /proc or /sys); set a directory on a disk (ENOENT)\n`,
    );
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('makes every missing level, takes one that is there, and refuses a file in the way', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cyborg-mkdir-'));
    try {
      await makeDirectory(join(root, 'a', 'b', 'c'));
      await makeDirectory(join(root, 'a', 'b', 'c'));
      writeFileSync(join(root, 'file'), '');
      await expect(makeDirectory(join(root, 'file', 'x'))).rejects.toMatchObject({ code: 'ENOTDIR' });
      await expect(makeDirectory('/proc/cyborg-nope/x')).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
