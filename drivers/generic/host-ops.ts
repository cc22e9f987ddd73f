import { execFile } from 'node:child_process';
import { access, readlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { devicesDir } from './sysfs.js';

const run = promisify(execFile);

/**
 * The host operations of the generic driver. Three ways to carry them out, chosen by config:
 * `sysfs` writes the kernel's files itself (the agent runs as root), `command` hands every
 * operation to one helper program (for privilege separation: `sudo cyborg-pci-helper …`), and
 * `simulate` only records what it would have done (demos, tests). Every operation is idempotent.
 */
export interface HostOps {
  readonly mode: 'sysfs' | 'command' | 'simulate';
  /** Binds a function to `driver` (vfio-pci) through `driver_override`, unbinding it first. */
  bind(address: string, driver: string): Promise<void>;
  /** Gives a function back to the kernel's own driver for it. */
  release(address: string): Promise<void>;
  createMdev(parent: string, type: string, uuid: string): Promise<void>;
  removeMdev(parent: string, type: string, uuid: string): Promise<void>;
  program(address: string, image: string): Promise<void>;
  /** Installs, removes or updates the driver itself on the host. */
  lifecycle(op: 'install' | 'uninstall' | 'update', version: string): Promise<void>;
}

export interface HostOpsCommands {
  /** argv run for install / uninstall / update / program in `sysfs` mode; `{version}`, `{address}`, `{image}` are filled in. */
  install?: string[];
  uninstall?: string[];
  update?: string[];
  program?: string[];
}

export class HostOpError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HostOpError';
  }
}

/** Writes sysfs under `root` (normally `/sys`); lifecycle and programming run configured commands. */
export class SysfsOps implements HostOps {
  readonly mode = 'sysfs';

  constructor(
    private readonly root: string,
    private readonly vfioDriver: string,
    private readonly commands: HostOpsCommands = {},
    private readonly timeoutMs = 120_000,
  ) {}

  async bind(address: string, driver: string): Promise<void> {
    const dev = join(devicesDir(this.root), address);
    const current = await linkName(join(dev, 'driver'));
    if (current === driver) return;
    await write(join(dev, 'driver_override'), driver);
    if (current) await write(join(dev, 'driver', 'unbind'), address);
    await write(join(this.root, 'bus', 'pci', 'drivers_probe'), address);
  }

  async release(address: string): Promise<void> {
    const dev = join(devicesDir(this.root), address);
    const current = await linkName(join(dev, 'driver'));
    // An empty override lets the kernel pick the device's own driver again on the probe below.
    await write(join(dev, 'driver_override'), '\n');
    if (current === this.vfioDriver) {
      await write(join(dev, 'driver', 'unbind'), address);
      await write(join(this.root, 'bus', 'pci', 'drivers_probe'), address);
    }
  }

  async createMdev(parent: string, type: string, uuid: string): Promise<void> {
    const t = join(devicesDir(this.root), parent, 'mdev_supported_types', type);
    if (await exists(join(t, 'devices', uuid))) return;
    await write(join(t, 'create'), uuid);
  }

  async removeMdev(parent: string, type: string, uuid: string): Promise<void> {
    const m = join(devicesDir(this.root), parent, 'mdev_supported_types', type, 'devices', uuid);
    if (!(await exists(m))) return;
    await write(join(m, 'remove'), '1');
  }

  async program(address: string, image: string): Promise<void> {
    if (!this.commands.program) throw new HostOpError('programming needs a command on this host: set CYBORG_GENERIC_PROGRAM_COMMAND');
    await this.exec(this.commands.program, { address, image });
  }

  async lifecycle(op: 'install' | 'uninstall' | 'update', version: string): Promise<void> {
    const argv = this.commands[op];
    if (argv) {
      await this.exec(argv, { version });
      return;
    }
    if (op === 'install' && !(await exists(join(this.root, 'bus', 'pci', 'drivers', this.vfioDriver)))) {
      throw new HostOpError(`${this.vfioDriver} is not loaded on this host: run "modprobe ${this.vfioDriver}" or set CYBORG_GENERIC_INSTALL_COMMAND`);
    }
  }

  private async exec(template: string[], vars: Record<string, string>): Promise<void> {
    const [file, ...args] = template.map((a) => a.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m));
    if (!file) throw new HostOpError('empty command');
    try {
      await run(file, args, { timeout: this.timeoutMs });
    } catch (err) {
      throw new HostOpError(`${basename(file)} failed: ${stderrOf(err)}`, { cause: err });
    }
  }
}

/** Hands every operation to one helper: `<helper…> <op> <args…>`; its non-zero exit is the failure. */
export class CommandOps implements HostOps {
  readonly mode = 'command';

  constructor(
    private readonly helper: string[],
    private readonly timeoutMs = 120_000,
  ) {
    if (helper.length === 0) throw new HostOpError('command mode needs a helper: set CYBORG_GENERIC_HELPER');
  }

  bind(address: string, driver: string): Promise<void> {
    return this.call('bind', address, driver);
  }
  release(address: string): Promise<void> {
    return this.call('release', address);
  }
  createMdev(parent: string, type: string, uuid: string): Promise<void> {
    return this.call('mdev-create', parent, type, uuid);
  }
  removeMdev(parent: string, type: string, uuid: string): Promise<void> {
    return this.call('mdev-remove', parent, type, uuid);
  }
  program(address: string, image: string): Promise<void> {
    return this.call('program', address, image);
  }
  lifecycle(op: 'install' | 'uninstall' | 'update', version: string): Promise<void> {
    return this.call(`driver-${op}`, version);
  }

  private async call(...args: string[]): Promise<void> {
    const [file, ...pre] = this.helper;
    try {
      await run(file!, [...pre, ...args], { timeout: this.timeoutMs });
    } catch (err) {
      throw new HostOpError(`${basename(file!)} ${args[0]} failed: ${stderrOf(err)}`, { cause: err });
    }
  }
}

/** Records what it would do. Only ever chosen by configuration (`CYBORG_GENERIC_HOST_OPS=simulate`). */
export class SimulatedOps implements HostOps {
  readonly mode = 'simulate';
  readonly calls: { op: string; args: string[] }[] = [];
  /** Bindings made, by address: tests and demos read them. */
  readonly bindings = new Map<string, string>();
  readonly mdevs = new Set<string>();

  async bind(address: string, driver: string): Promise<void> {
    this.calls.push({ op: 'bind', args: [address, driver] });
    this.bindings.set(address, driver);
  }

  async release(address: string): Promise<void> {
    this.calls.push({ op: 'release', args: [address] });
    this.bindings.delete(address);
  }

  async createMdev(parent: string, type: string, uuid: string): Promise<void> {
    this.calls.push({ op: 'mdev-create', args: [parent, type, uuid] });
    this.mdevs.add(uuid);
  }

  async removeMdev(parent: string, type: string, uuid: string): Promise<void> {
    this.calls.push({ op: 'mdev-remove', args: [parent, type, uuid] });
    this.mdevs.delete(uuid);
  }

  async program(address: string, image: string): Promise<void> {
    this.calls.push({ op: 'program', args: [address, image] });
  }

  async lifecycle(op: 'install' | 'uninstall' | 'update', version: string): Promise<void> {
    this.calls.push({ op: `driver-${op}`, args: [version] });
  }
}

async function write(path: string, text: string): Promise<void> {
  try {
    await writeFile(path, text);
  } catch (err) {
    throw new HostOpError(`cannot write ${path}: ${(err as Error).message}`, { cause: err });
  }
}

async function linkName(path: string): Promise<string | null> {
  try {
    return basename(await readlink(path));
  } catch {
    return null;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string; code?: unknown };
  return (e.stderr?.trim() || e.message || String(err)).split('\n').slice(0, 3).join(' ');
}
