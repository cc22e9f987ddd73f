import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * A small JSON file of what an operator chose for a card (a MIG layout, a VF count), kept on the
 * host so that it is re-applied after a reboot. Written atomically (temp file, rename): a crash
 * leaves the old choice or the new one, never half of one.
 */
export class StateFile<T extends Record<string, unknown>> {
  private readonly path: string | null;

  constructor(dir: string | undefined, name: string) {
    this.path = dir ? join(dir, name) : null;
  }

  async read(): Promise<Partial<T>> {
    if (!this.path) return {};
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as Partial<T>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
  }

  async update(fn: (cur: Partial<T>) => Partial<T>): Promise<void> {
    if (!this.path) return;
    const next = fn(await this.read());
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(next, null, 2)}\n`);
    await rename(tmp, this.path);
  }
}
