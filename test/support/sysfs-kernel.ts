import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildTree, type FnSpec } from '../fixtures/sysfs/build.js';

/**
 * The kernel's side of a sysfs fixture tree, for stories where drivers write to it: a uuid written
 * to a type's `create` makes that mdev (`<parent>/<uuid>`, its `remove`, one instance fewer
 * available), `1` written to an mdev's `remove` takes it away, and a count written to a PF's
 * `sriov_numvfs` enables that many of the VFs the fixture lists, as sysfs-bus-vfio-mdev and
 * sysfs-bus-pci describe. A fixture tree is plain files, so nothing happens at the write itself:
 * `drives` answers the writes when the driver's call returns, before the agent looks again (the
 * agent re-discovers inside a `vf_count` command, right after the driver wrote).
 *
 * The tree is always rebuilt from the spec this keeps, so only mdevs and VF counts survive a
 * change: other files a driver wrote (a VF's `current_vgpu_type`) go back to the fixture's.
 */
export class SysfsKernel {
  private booted: FnSpec[];
  /** Every VF each PF of the fixture can have, by PF address. */
  private readonly allVfs: Map<string, FnSpec[]>;

  constructor(
    private readonly root: string,
    private readonly spec: FnSpec[],
  ) {
    this.booted = structuredClone(spec);
    this.allVfs = new Map(spec.filter((f) => f.sriov).map((f) => [f.address, f.sriov!.vfs]));
    buildTree(root, this.booted, ['vfio-pci']);
  }

  /**
   * The host reboots: every mdev is gone, and SR-IOV comes up as `sriovOff` leaves it (the PFs
   * named boot with `sriov_numvfs` 0, as without a udev rule or a driver option that enables VFs).
   */
  reboot(sriovOff: readonly string[] = []): void {
    this.booted = structuredClone(this.spec).map((f) => (f.sriov && sriovOff.includes(f.address) ? { ...f, sriov: { ...f.sriov, vfs: [] } } : f));
    buildTree(this.root, this.booted, ['vfio-pci']);
  }

  /** Applies what the drivers wrote since the last look; true when the tree changed. */
  settle(): boolean {
    let changed = false;
    for (const pf of this.booted) {
      for (const fn of [pf, ...(pf.sriov?.vfs ?? [])]) changed = this.mdevWrites(fn) || changed;
      changed = this.numvfsWrite(pf) || changed;
    }
    if (changed) buildTree(this.root, this.booted, ['vfio-pci']);
    return changed;
  }

  /**
   * The driver, each of its calls answered by the kernel before it returns. Only the stand-in is
   * in between: the driver's own code runs unchanged, on its own object.
   */
  drives<T extends object>(driver: T): T {
    return new Proxy(driver, {
      get: (target, key) => {
        const value: unknown = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const out: unknown = value.apply(target, args);
          return out instanceof Promise ? out.then((r: unknown) => (this.settle(), r)) : out;
        };
      },
    });
  }

  private dir(address: string): string {
    return join(this.root, 'bus', 'pci', 'devices', address);
  }

  private mdevWrites(fn: FnSpec): boolean {
    let changed = false;
    for (const t of fn.mdev ?? []) {
      const created = readFileSync(join(this.dir(fn.address), 'mdev_supported_types', t.id, 'create'), 'utf8').trim();
      if (created && !(t.devices ?? []).includes(created) && t.available > 0) {
        t.devices = [...(t.devices ?? []), created];
        t.available -= 1;
        changed = true;
      }
      for (const uuid of t.devices ?? []) {
        const remove = join(this.dir(fn.address), uuid, 'remove');
        if (existsSync(remove) && readFileSync(remove, 'utf8').trim() === '1') {
          t.devices = t.devices!.filter((u) => u !== uuid);
          t.available += 1;
          changed = true;
        }
      }
    }
    return changed;
  }

  private numvfsWrite(pf: FnSpec): boolean {
    if (!pf.sriov) return false;
    const want = Number(readFileSync(join(this.dir(pf.address), 'sriov_numvfs'), 'utf8').trim());
    if (want === pf.sriov.vfs.length) return false;
    const all = this.allVfs.get(pf.address) ?? [];
    if (want > all.length) throw new Error(`the fixture lists ${all.length} VFs of ${pf.address}; the stand-in cannot enable ${want}`);
    pf.sriov = { ...pf.sriov, vfs: all.slice(0, want) };
    return true;
  }
}
