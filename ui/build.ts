/**
 * Builds the visualizer with Vite when ui/dist is missing or older than its sources. `npm start`
 * (prestart), the e2e tests and the UI benchmark call it, so nobody serves a stale page.
 * Run directly: `tsx ui/build.ts [--force]`.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const UI = fileURLToPath(new URL('.', import.meta.url));
const DIST = join(UI, 'dist');
const STAMP = join(DIST, '.built');
// Outside the tree (nothing to ignore in git), one per checkout.
const LOCK = join(tmpdir(), `cyborg-ui-build-${createHash('sha1').update(UI).digest('hex').slice(0, 12)}.lock`);
const SOURCES = ['index.html', 'vite.config.ts', 'src'];

/** Newest modification time under the page's sources (and the installed packages it bundles). */
function newestSource(): number {
  let newest = 0;
  const visit = (p: string): void => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) for (const e of readdirSync(p)) visit(join(p, e));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const s of SOURCES) visit(join(UI, s));
  visit(join(UI, '..', 'package-lock.json'));
  return newest;
}

/** True when ui/dist holds a build at least as new as every source file. */
export function uiIsFresh(): boolean {
  const stamp = statSync(STAMP, { throwIfNoEntry: false });
  return stamp !== undefined && stamp.mtimeMs >= newestSource();
}

/**
 * Builds ui/dist unless it is fresh. Concurrent callers (parallel test files, a test beside
 * `npm start`) take turns on a lock directory; the second one then finds the build fresh.
 */
export async function ensureUiBuilt(opts: { force?: boolean; timeoutMs?: number } = {}): Promise<{ built: boolean; dir: string }> {
  if (!opts.force && uiIsFresh()) return { built: false, dir: DIST };
  await lock(opts.timeoutMs ?? 120_000);
  try {
    if (!opts.force && uiIsFresh()) return { built: false, dir: DIST };
    const { build } = await import('vite');
    await build({ configFile: join(UI, 'vite.config.ts'), logLevel: 'warn' });
    writeFileSync(STAMP, new Date().toISOString());
    return { built: true, dir: DIST };
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

async function lock(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock left by a build that died: its owner no longer exists.
      if (!ownerAlive()) {
        rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for another UI build (lock ${LOCK})`);
      await delay(200);
    }
  }
}

function ownerAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8').trim());
  } catch {
    return true; // being created right now
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { built } = await ensureUiBuilt({ force: process.argv.includes('--force') });
  process.stdout.write(built ? `visualizer built into ${DIST}\n` : 'visualizer is up to date\n');
}
