import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError, StartupExit } from '../config/index.js';

export interface DataLock {
  path: string;
  release(): void;
}

/** Whether a process with this pid runs on this machine (EPERM: it does, under another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes `<dir>/cyborg.lock` for this process, or refuses at once naming the holder's pid: two
 * processes writing one embedded database (a second `npm start` in a checkout) lose each other's
 * writes. A lock whose holder is gone (killed, the machine restarted) is taken over.
 */
export function lockDataDir(dir: string, option = '[DEFAULT] state_path'): DataLock {
  const path = join(dir, 'cyborg.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let held = true;
      return {
        path,
        release: () => {
          if (!held) return;
          held = false;
          try {
            if (Number(readFileSync(path, 'utf8').trim()) === process.pid) unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let pid = NaN;
    try {
      pid = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // released between our open and read: try again
    }
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new StartupError(
        `${option} = ${dir}: its embedded database is in use by process ${pid} (${path}); stop that process, or give this one another data directory`,
        StartupExit.locked,
      );
    }
    try {
      unlinkSync(path); // its holder is gone
    } catch {
      // another process took it over first: the next attempt sees who
    }
  }
  throw new StartupError(`${option} = ${dir}: could not take ${path}`, StartupExit.locked);
}
