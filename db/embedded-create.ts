import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { StartupError, StartupExit } from '../config/index.js';

/** db/embedded-init.ts beside this file, as this process runs it (.ts under tsx, .js built). */
const INIT = fileURLToPath(new URL(`./embedded-init${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** initdb into `dir`, in a child process whose memory goes back when it exits (db/embedded-init.ts). */
async function initInChild(dir: string): Promise<void> {
  // Under tsx the sources run through its loader, which a `register()` call (cli/bin.js) leaves out of execArgv.
  const loader = INIT.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx')) ? ['--import', import.meta.resolve('tsx/esm')] : [];
  await promisify(execFile)(process.execPath, [...process.execArgv, ...loader, INIT, dir], { timeout: 300_000 }).catch(
    (err: { stderr?: string; message: string }) => {
      throw new StartupError(`the embedded database could not be created in ${dir}: ${(err.stderr ?? '').trim() || err.message}`, StartupExit.database);
    },
  );
}

/** The installed PGlite's version: a template is only good for the PostgreSQL build that made it. */
function pgliteVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite')));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Fills the empty `dir` with a new embedded database. initdb's output is the same for every new
 * directory of one PGlite version, so it runs once per machine and version into a template under
 * the temp directory, and each new directory is a copy of it: a second or two instead of initdb's
 * ten to thirty (every test's fresh all-in-one, a user's first start after the first). Another
 * process making the same template at once loses the rename and uses the winner's; a template
 * that cannot be made or read is done without (initdb into `dir` itself).
 */
export async function createDataDir(dir: string): Promise<void> {
  const template = join(tmpdir(), `cyborg-pgdata-template-${pgliteVersion()}`);
  try {
    if (!existsSync(join(template, 'PG_VERSION'))) {
      const staging = `${template}.${process.pid}.tmp`;
      rmSync(staging, { recursive: true, force: true });
      await initInChild(staging);
      try {
        renameSync(staging, template);
      } catch {
        rmSync(staging, { recursive: true, force: true }); // another process's template is in place
      }
    }
    cpSync(template, dir, { recursive: true });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    await initInChild(dir);
  }
}
