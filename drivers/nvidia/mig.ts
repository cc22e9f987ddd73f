import { DriverError } from '../../errors/index.js';
import type { CommandRunner } from '../exec.js';
import { parseLgi, parseLgip, parseQueryXml, type GpuInstance, type GpuInstanceProfile, type SmiGpu } from './smi.js';

/** nvidia-smi through the runner, with its deadline. */
export class Smi {
  constructor(
    private readonly argv: readonly string[],
    private readonly run: CommandRunner,
    private readonly timeoutMs: number,
  ) {}

  get enabled(): boolean {
    return this.argv.length > 0;
  }

  private async out(args: string[]): Promise<string> {
    const argv = [...this.argv, ...args];
    return (await this.run(argv, { timeoutMs: this.timeoutMs, what: `nvidia-smi ${args.join(' ')}` })).stdout;
  }

  /** Resets one GPU (`--gpu-reset -i <PCI address>`): nvidia-smi refuses while a process uses it. */
  reset(address: string): Promise<string> {
    return this.out(['--gpu-reset', '-i', address]);
  }

  async query(): Promise<SmiGpu[]> {
    return parseQueryXml(await this.out(['-q', '-x']));
  }

  async profiles(): Promise<GpuInstanceProfile[]> {
    return parseLgip(await this.out(['mig', '-lgip']));
  }

  async instances(): Promise<GpuInstance[]> {
    try {
      return parseLgi(await this.out(['mig', '-lgi']));
    } catch (err) {
      // nvidia-smi exits non-zero when a MIG GPU has no instance yet: that is an empty list.
      if (err instanceof DriverError && /No GPU instances found/i.test(String(err.details.stderr ?? '') + err.message)) return [];
      throw err;
    }
  }

  async destroyAll(gpu: number): Promise<void> {
    await this.out(['mig', '-i', String(gpu), '-dci']);
    await this.out(['mig', '-i', String(gpu), '-dgi']);
  }

  async create(gpu: number, profileIds: readonly number[]): Promise<string> {
    return this.out(['mig', '-i', String(gpu), '-cgi', profileIds.join(','), '-C']);
  }
}

/** `3g.40gb` → 3 compute slices; `1g.10gb+me` → 1. */
function slices(profile: string): number {
  return Number(/^(\d+)g\./.exec(profile)?.[1] ?? 0);
}

const bare = (name: string): string =>
  name
    .replace(/^MIG\s+/i, '')
    .trim()
    .toLowerCase();

/**
 * Resolves an operator's layout (profile names like `1g.10gb` or ids like `19`) against the
 * card's `-lgip` and checks it fits: each profile known, no more of one than the card has, the
 * compute slices and memory within the whole GPU's. nvidia-smi has the last word (placement);
 * this catches the layouts no placement could take, before anything is destroyed.
 */
export function resolveLayout(address: string, wanted: readonly string[], profiles: readonly GpuInstanceProfile[]): GpuInstanceProfile[] {
  const refuse = (why: string): never => {
    throw new DriverError('driver.failed', `MIG layout [${wanted.join(', ')}] does not fit GPU ${address}: ${why}`, {
      reason: 'layout_unsupported',
      address,
      layout: wanted,
    });
  };
  if (profiles.length === 0) refuse('the card lists no MIG profiles');
  const chosen = wanted.map(
    (w) =>
      profiles.find((p) => String(p.id) === w.trim() || p.name.toLowerCase() === bare(w)) ??
      refuse(`no profile ${w} (the card has ${profiles.map((p) => p.name).join(', ')})`),
  );
  for (const p of new Set(chosen)) {
    const n = chosen.filter((c) => c === p).length;
    if (n > p.total) refuse(`${n} × ${p.name}, the card takes at most ${p.total}`);
  }
  const whole = profiles.reduce((a, p) => (slices(p.name) > slices(a.name) ? p : a));
  const used = chosen.reduce((s, p) => s + slices(p.name), 0);
  if (used > slices(whole.name)) refuse(`${used} compute slices, the card has ${slices(whole.name)}`);
  const mem = chosen.reduce((s, p) => s + p.memoryGiB, 0);
  if (mem > whole.memoryGiB + 0.5) refuse(`${mem} GiB of memory, the card has ${whole.memoryGiB}`);
  return chosen;
}

/** Profile ids of the instances a GPU has now, sorted: two layouts compare equal as multisets. */
export function currentIds(gpu: number, instances: readonly GpuInstance[]): number[] {
  return instances
    .filter((i) => i.gpu === gpu)
    .map((i) => i.profileId)
    .sort((a, b) => a - b);
}

/**
 * Replaces the GPU's instances with `layout`. If nvidia-smi refuses it, the previous instances
 * are created again; if that fails too, the error names both reasons.
 */
export async function replaceLayout(smi: Smi, gpu: SmiGpu, layout: readonly number[], previous: readonly number[]): Promise<string> {
  if (previous.length > 0) await smi.destroyAll(gpu.index);
  try {
    return await smi.create(gpu.index, layout);
  } catch (err) {
    const reason = (err as Error).message;
    try {
      await smi.destroyAll(gpu.index).catch(() => undefined);
      if (previous.length > 0) await smi.create(gpu.index, previous);
    } catch (restoreErr) {
      throw new DriverError(
        'driver.failed',
        `MIG layout on GPU ${gpu.address} failed (${reason}), and restoring the previous layout failed too (${(restoreErr as Error).message})`,
        { reason: 'layout_rejected', address: gpu.address, restored: false },
        { cause: err },
      );
    }
    throw new DriverError(
      'driver.failed',
      `MIG layout on GPU ${gpu.address} failed, previous layout restored: ${reason}`,
      { reason: 'layout_rejected', address: gpu.address, restored: true },
      { cause: err },
    );
  }
}
