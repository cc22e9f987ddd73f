import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StartupError } from '../config/errors.js';
import { lockDataDir } from './data-lock.js';

const dir = (): string => mkdtempSync(join(tmpdir(), 'cyborg-lock-'));

describe('the lock on a data directory', () => {
  it("is this process's while held, and gone once released", () => {
    const d = dir();
    const lock = lockDataDir(d);
    expect(readFileSync(join(d, 'cyborg.lock'), 'utf8')).toBe(`${process.pid}\n`);
    lock.release();
    expect(existsSync(join(d, 'cyborg.lock'))).toBe(false);
  });

  it('held by another live process: refused at once, naming its pid', async () => {
    const d = dir();
    const other = spawn('sleep', ['30']);
    try {
      writeFileSync(join(d, 'cyborg.lock'), `${other.pid}\n`);
      expect(() => lockDataDir(d)).toThrow(StartupError);
      expect(() => lockDataDir(d)).toThrow(`[DEFAULT] state_path = ${d}: its embedded database is in use by process ${other.pid}`);
    } finally {
      other.kill();
    }
  });

  it('left by a process that is gone (killed, a reboot): taken over', async () => {
    const d = dir();
    const gone = spawn('true');
    await new Promise((r) => gone.once('exit', r));
    writeFileSync(join(d, 'cyborg.lock'), `${gone.pid}\n`);
    const lock = lockDataDir(d);
    expect(readFileSync(join(d, 'cyborg.lock'), 'utf8')).toBe(`${process.pid}\n`);
    lock.release();
  });
});
