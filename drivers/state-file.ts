import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** The on-disk envelope: bump `version` on any change of a file's shape; another version is set aside. */
interface Envelope {
  version: number;
  data: unknown;
}

const VERSION = 1;

/** Why a state file could not be used: it is set aside (renamed) and its driver starts from nothing. */
export type StateFileProblem = { path: string; reason: string; keptAs: string };

/**
 * A small JSON file of what an operator chose for a card (a MIG layout, a VF count, the image an
 * FPGA runs), kept on the host so that it is re-applied after a reboot. One codec for all of
 * them, as the agent's cache is written: versioned, checked against its schema on read, written
 * atomically and durably (temp file, fsync, rename, fsync of the directory: a crash leaves the
 * old choice or the new one, never half of one). A file that is corrupt, of another version or
 * not of its schema is set aside and reported (`onProblem`), never trusted.
 */
export class StateFile<T extends Record<string, unknown>> {
  private readonly path: string | null;
  /** The last file set aside (what `onProblem` was told), for the driver's health and tests. */
  problem: StateFileProblem | undefined;

  constructor(
    dir: string | undefined,
    name: string,
    private readonly schema: TSchema,
    private readonly onProblem: (p: StateFileProblem) => void = warn,
  ) {
    this.path = dir ? join(dir, name) : null;
  }

  async read(): Promise<Partial<T>> {
    if (!this.path) return {};
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.setAside('not JSON (a torn or hand-edited file)', 'corrupt');
    }
    // Files written before the envelope hold the data itself: accepted when they fit the schema.
    const env = isEnvelope(parsed) ? parsed : { version: VERSION, data: parsed };
    if (env.version !== VERSION) return this.setAside(`version ${String(env.version)}, this agent reads ${VERSION}`, `v${String(env.version)}`);
    if (!Value.Check(this.schema, env.data)) {
      const first = [...Value.Errors(this.schema, env.data)][0];
      return this.setAside(`not a valid record: ${first ? `${first.path || '/'} ${first.message}` : 'schema mismatch'}`, 'invalid');
    }
    return env.data as Partial<T>;
  }

  /** Reads, applies `fn`, and writes the result durably (one writer per file: the driver's). */
  async update(fn: (cur: Partial<T>) => Partial<T>): Promise<void> {
    if (!this.path) return;
    const next = fn(await this.read());
    await mkdir(dirname(this.path), { recursive: true });
    await writeAtomic(this.path, `${JSON.stringify({ version: VERSION, data: next } satisfies Envelope, null, 2)}\n`);
  }

  private async setAside(reason: string, suffix: string): Promise<Partial<T>> {
    const keptAs = `${this.path!}.${suffix}`;
    await rename(this.path!, keptAs).catch(() => undefined);
    this.problem = { path: this.path!, reason, keptAs };
    this.onProblem(this.problem);
    return {};
  }
}

function isEnvelope(x: unknown): x is Envelope {
  return typeof x === 'object' && x !== null && typeof (x as Envelope).version === 'number' && 'data' in x && Object.keys(x).length === 2;
}

function warn(p: StateFileProblem): void {
  process.emitWarning(`state file ${p.path} set aside as ${p.keptAs}: ${p.reason}`, { code: 'CYBORG_STATE_FILE' });
}

/** Temp file, fsync, rename over the old one, fsync the directory: the file is old or new, never torn. */
export async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
