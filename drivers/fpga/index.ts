import type { Driver, DriverDevice, OpRequest, OpResult, Resetter } from '../driver.js';
import type { ImageHolder, Progress, ProgressProgrammer } from '../abilities.js';
import { DriverError } from '../../errors/index.js';
import type { CommandRunner } from '../exec.js';
import { readPciFunctions, withIdentity } from '../generic/index.js';
import { discoverIntel, discoverXilinx } from './discover.js';
import { FpgaProgrammer, type ImageSpec } from './program.js';

export { FpgaProgrammer, type ImageSpec } from './program.js';
export { INTEL_PRODUCTS } from './discover.js';

export interface FpgaDriverOptions {
  host: string;
  sysfsRoot: string;
  /** `[fpga] program_command` argv: `{address}`, `{bus}`, `{device}`, `{function}`, `{image}` are filled in. */
  programCommand?: readonly string[];
  /** Deadline of one programming. */
  programTimeoutMs?: number;
  /** Where the last programmed image per card is kept (the rollback target after a restart too). */
  stateDir?: string;
  /** Intel only: `vendor:product` of the PFs (Cyborg knows the PAC Arria 10, 8086:09c4). */
  knownIds?: readonly string[];
  run?: CommandRunner;
}

/** OPAE's fpgaconf, as Cyborg's Intel driver calls it. */
export const FPGACONF = ['fpgaconf', '-B', '0x{bus}', '-D', '0x{device}', '-F', '0x{function}', '{image}'];
/** XRT's xbmgmt, as Cyborg's Xilinx driver calls it. */
export const XBMGMT = ['/opt/xilinx/xrt/bin/xbmgmt', 'program', '--device', '{address}', '--base', '--image', '{image}'];

function imageOf(params: Record<string, unknown>): ImageSpec {
  const s = (k: string): string | undefined => (typeof params[k] === 'string' && params[k] !== '' ? (params[k] as string) : undefined);
  const path = s('imagePath');
  if (!path)
    throw new DriverError('driver.failed', 'program needs imagePath (the bitstream fetched from Glance) and its checksum', { reason: 'image_missing' });
  return {
    path,
    hashAlgorithm: s('hashAlgorithm'),
    hash: s('hash'),
    sha256: s('sha256'),
    md5: s('md5'),
    bitstreamId: s('bitstreamId'),
    functionId: s('functionId'),
  };
}

/** What both FPGA drivers share: the card of a deployable, and programming through the configured tool. */
abstract class FpgaDriver implements Driver, ProgressProgrammer, ImageHolder, Resetter {
  abstract readonly name: string;
  readonly version = '1.0.0';
  protected readonly programmer: FpgaProgrammer;
  /** Deployable uuid → the card (control-path address) it is on, from the last discovery. */
  private readonly cardOf = new Map<string, string>();

  constructor(
    protected readonly opts: FpgaDriverOptions,
    defaultCommand: readonly string[],
    stateName: string,
  ) {
    this.programmer = new FpgaProgrammer({
      command: opts.programCommand?.length ? opts.programCommand : defaultCommand,
      timeoutMs: opts.programTimeoutMs ?? 600_000,
      stateDir: opts.stateDir,
      stateName,
      run: opts.run,
    });
  }

  protected abstract scan(): Promise<DriverDevice[]>;

  async discover(): Promise<DriverDevice[]> {
    const devices = await this.scan();
    for (const d of devices) {
      const j = JSON.parse(d.controlPath.info) as Record<string, string>;
      for (const dep of d.deployables) this.cardOf.set(dep.uuid, `${j.domain}:${j.bus}:${j.device}.${j.function}`);
    }
    return devices;
  }

  imagesInUse(): Promise<string[]> {
    return this.programmer.imagesInUse();
  }

  async program(req: OpRequest, opts: { onProgress?: (p: Progress) => void } = {}): Promise<OpResult> {
    const image = imageOf(req.params);
    return this.programmer.program(await this.cardFor(req), image, opts.onProgress);
  }

  /**
   * Reloads the card's recorded image (`POST /accelerators/{id}/reset`): the FPGA's reset, as
   * `nvidia-smi --gpu-reset` is the GPU's. The conductor never asks while an instance holds it.
   */
  async reset(req: OpRequest): Promise<OpResult> {
    return this.programmer.reload(await this.cardFor(req));
  }

  private async cardFor(req: OpRequest): Promise<string> {
    if (!this.cardOf.has(req.deployable.uuid)) await this.discover();
    const address = this.cardOf.get(req.deployable.uuid);
    if (!address) throw new DriverError('driver.failed', `deployable ${req.deployable.name} is no longer on this host`, { reason: 'not_found' });
    return address;
  }
}

/** Cyborg's `intel_fpga_driver` (docs/drivers.md). */
export class IntelFpgaDriver extends FpgaDriver {
  readonly name = 'intel_fpga_driver';

  constructor(opts: FpgaDriverOptions) {
    super(opts, FPGACONF, 'intel-fpga-programmed.json');
  }

  protected async scan(): Promise<DriverDevice[]> {
    const fns = await readPciFunctions(this.opts.sysfsRoot);
    return withIdentity(this.opts.sysfsRoot, await discoverIntel(this.opts.sysfsRoot, this.opts.host, fns, this.opts.knownIds ?? ['8086:09c4'], this.name));
  }
}

/** Cyborg's `xilinx_fpga_driver` (docs/drivers.md). */
export class XilinxFpgaDriver extends FpgaDriver {
  readonly name = 'xilinx_fpga_driver';

  constructor(opts: FpgaDriverOptions) {
    super(opts, XBMGMT, 'xilinx-fpga-programmed.json');
  }

  protected async scan(): Promise<DriverDevice[]> {
    const programmed = await this.programmer.programmed();
    const fns = await readPciFunctions(this.opts.sysfsRoot);
    return withIdentity(
      this.opts.sysfsRoot,
      discoverXilinx(this.opts.host, fns, (a) => programmed[a]?.functionId, this.name),
    );
  }
}
