import { createHash, getHashes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Progress } from '../abilities.js';
import { DriverError } from '../../errors/index.js';
import { runCommand, type CommandRunner } from '../exec.js';
import { parseAddress } from '../generic/pci.js';
import { Type } from '@sinclair/typebox';
import { StateFile } from '../state-file.js';

/** An image to program and how the caller vouches for it (Glance's checksum / os_hash_value). */
export interface ImageSpec {
  path: string;
  /** Glance's multihash: `os_hash_algo` (sha512 by default, any algorithm Node's crypto knows) and `os_hash_value`. */
  hashAlgorithm?: string;
  hash?: string;
  sha256?: string;
  md5?: string;
  bitstreamId?: string;
  functionId?: string;
}

export interface ProgrammerOptions {
  /** argv with `{address}`, `{bus}`, `{device}`, `{function}`, `{image}` filled in. */
  command: readonly string[];
  timeoutMs: number;
  stateDir?: string;
  stateName: string;
  run?: CommandRunner;
}

/** What was last programmed on each card: the image a failed programming rolls back to. */
export type Programmed = Record<string, { image: string; bitstreamId?: string; functionId?: string }>;

async function digest(path: string, algorithm: string): Promise<string> {
  const h = createHash(algorithm);
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/**
 * Programs FPGA images one at a time per card: checksum first (a mismatch programs nothing), the
 * configured tool under its deadline with its output as progress, and on failure the previous
 * image programmed again. A second programming of a busy card is refused, never queued behind.
 */
/** The state file's schema: each card's image as recorded (checked on read). */
const PROGRAMMED = Type.Record(
  Type.String(),
  Type.Object({ image: Type.String(), bitstreamId: Type.Optional(Type.String()), functionId: Type.Optional(Type.String()) }),
);

export class FpgaProgrammer {
  private readonly busy = new Set<string>();
  private readonly state: StateFile<Programmed>;
  private readonly run: CommandRunner;

  constructor(private readonly opts: ProgrammerOptions) {
    this.state = new StateFile(opts.stateDir, opts.stateName, PROGRAMMED);
    this.run = opts.run ?? runCommand;
  }

  programmed(): Promise<Partial<Programmed>> {
    return this.state.read();
  }

  /** The image files the cards run: each one's rollback target, which must stay on disk. */
  async imagesInUse(): Promise<string[]> {
    return Object.values(await this.state.read()).flatMap((p) => (p ? [p.image] : []));
  }

  async program(
    address: string,
    image: ImageSpec,
    onProgress: (p: Progress) => void = () => undefined,
  ): Promise<{ address: string; bitstreamId: string | null; functionId: string | null }> {
    if (this.busy.has(address)) throw new DriverError('driver.busy', `FPGA ${address} is being programmed: try again when it is done`, { address });
    this.busy.add(address);
    try {
      onProgress({ phase: 'verify', message: `checking ${image.path}` });
      await verify(address, image);
      const previous = (await this.state.read())[address];
      try {
        await this.write(address, image.path, onProgress);
      } catch (err) {
        await this.rollback(address, previous?.image, err as Error, onProgress);
      }
      await this.state.update((cur) => ({
        ...cur,
        [address]: {
          image: image.path,
          ...(image.bitstreamId ? { bitstreamId: image.bitstreamId } : {}),
          ...(image.functionId ? { functionId: image.functionId } : {}),
        },
      }));
      onProgress({ phase: 'done', message: `${address} programmed` });
      return { address, bitstreamId: image.bitstreamId ?? null, functionId: image.functionId ?? null };
    } finally {
      this.busy.delete(address);
    }
  }

  /**
   * Writes the card's last programmed image again (an operator's reset: a card whose logic hung or
   * whose configuration a fault corrupted reloads what it is recorded to run). The image was
   * verified when it was first programmed and is kept on disk as the card's rollback target.
   */
  async reload(
    address: string,
    onProgress: (p: Progress) => void = () => undefined,
  ): Promise<{ address: string; image: string; bitstreamId: string | null; functionId: string | null }> {
    const current = (await this.state.read())[address];
    if (!current)
      throw new DriverError('driver.failed', `FPGA ${address} has no image recorded to reload: program it first`, { reason: 'nothing_to_reload', address });
    if (this.busy.has(address)) throw new DriverError('driver.busy', `FPGA ${address} is being programmed: try again when it is done`, { address });
    this.busy.add(address);
    try {
      onProgress({ phase: 'program', message: `reloading ${current.image}` });
      await this.write(address, current.image, onProgress);
      onProgress({ phase: 'done', message: `${address} reloaded` });
      return { address, image: current.image, bitstreamId: current.bitstreamId ?? null, functionId: current.functionId ?? null };
    } finally {
      this.busy.delete(address);
    }
  }

  private async write(address: string, image: string, onProgress: (p: Progress) => void): Promise<void> {
    const a = parseAddress(address);
    if (!a) throw new DriverError('driver.failed', `not a PCI address: ${address}`, { reason: 'address_invalid' });
    const vars: Record<string, string> = { address, bus: a.bus, device: a.slot, function: a.function, image };
    const argv = this.opts.command.map((x) => x.replace(/\{(address|bus|device|function|image)\}/g, (_, k: string) => vars[k]!));
    onProgress({ phase: 'program', message: argv.join(' ') });
    await this.run(argv, { timeoutMs: this.opts.timeoutMs, what: `program ${address}`, onLine: (line) => onProgress({ phase: 'program', message: line }) });
  }

  /** Never returns: the programming failed, whether or not the card is back on its previous image. */
  private async rollback(address: string, previous: string | undefined, err: Error, onProgress: (p: Progress) => void): Promise<never> {
    const reason = err.message;
    const code = err instanceof DriverError && err.code === 'driver.timeout' ? 'driver.timeout' : 'driver.failed';
    if (!previous)
      throw new DriverError(
        code,
        `programming ${address} failed and no previous image is known: ${reason}`,
        { reason: 'program_failed', address, rolledBack: false },
        { cause: err },
      );
    onProgress({ phase: 'rollback', message: `programming failed, restoring ${previous}` });
    try {
      await this.write(address, previous, onProgress);
    } catch (again) {
      throw new DriverError(
        'driver.failed',
        `programming ${address} failed (${reason}), and restoring ${previous} failed too (${(again as Error).message})`,
        { reason: 'rollback_failed', address, rolledBack: false },
        { cause: err },
      );
    }
    throw new DriverError(
      code,
      `programming ${address} failed, previous image ${previous} restored: ${reason}`,
      { reason: 'program_failed', address, rolledBack: true },
      { cause: err },
    );
  }
}

/**
 * The checks an image comes with, strongest first: Glance's multihash where this Node knows its
 * algorithm, else a sha256 the operator gave, else Glance's md5 `checksum`. One is enough (they
 * vouch for the same bytes); none is refused.
 */
function checksOf(address: string, image: ImageSpec): [string, string] {
  const known = new Set(getHashes());
  const algo = image.hashAlgorithm?.toLowerCase();
  if (algo && image.hash && known.has(algo)) return [algo, image.hash];
  if (image.sha256) return ['sha256', image.sha256];
  if (image.md5) return ['md5', image.md5];
  if (algo && image.hash)
    throw new DriverError('driver.failed', `image ${image.path} for ${address} comes with a ${algo} checksum, which this host cannot compute, and no md5`, {
      reason: 'checksum_unsupported',
      address,
      algorithm: algo,
    });
  throw new DriverError('driver.failed', `image ${image.path} for ${address} comes with no checksum (Glance's os_hash_value or md5 checksum, or sha256)`, {
    reason: 'checksum_missing',
    address,
  });
}

async function verify(address: string, image: ImageSpec): Promise<void> {
  const [algorithm, want] = checksOf(address, image);
  let got: string;
  try {
    got = await digest(image.path, algorithm);
  } catch (err) {
    throw new DriverError(
      'driver.failed',
      `image ${image.path} cannot be read: ${(err as Error).message}`,
      { reason: 'image_missing', address },
      { cause: err },
    );
  }
  if (got !== want.toLowerCase()) {
    throw new DriverError('driver.failed', `image ${image.path} for ${address}: ${algorithm} is ${got}, expected ${want}; nothing was programmed`, {
      reason: 'checksum_mismatch',
      address,
      algorithm,
    });
  }
}
