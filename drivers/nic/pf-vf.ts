import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BoundHandle, Observation } from '../abilities.js';
import type { DriverDevice } from '../driver.js';
import { DriverError } from '../../errors/index.js';
import type { PciFunction } from '../generic/index.js';
import { Type } from '@sinclair/typebox';
import { StateFile } from '../state-file.js';
import type { DeployableT } from '../../model/index.js';

/** The PF/VF split of Cyborg's Intel NIC and QAT drivers: a PF with VFs reports one deployable per VF. */
export interface PfWithVfs {
  pf: PciFunction;
  vfs: PciFunction[];
}

/** The known physical functions (`vendor:product`) and their VFs, in address order. */
export function pfsWithVfs(fns: readonly PciFunction[], known: readonly string[]): PfWithVfs[] {
  const byAddr = new Map(fns.map((f) => [f.address, f]));
  return fns
    .filter((f) => f.physfn === null && known.includes(`${f.vendorId}:${f.productId}`))
    .map((pf) => ({ pf, vfs: pf.virtfns.map((a) => byAddr.get(a)).filter((v): v is PciFunction => v !== undefined) }));
}

/**
 * What is attached now, by PF, and the VF counts the operator chose: `sriov_numvfs` may change
 * only while no VF of the PF is attached, and a chosen count is written again after a reboot.
 */
export class VfCounts {
  private readonly bound = new Map<string, DeployableT>();
  private readonly state: StateFile<Record<string, number>>;

  constructor(
    private readonly sysfsRoot: string,
    stateDir: string | undefined,
    name: string,
    private readonly pfOf: (dep: DeployableT) => string | undefined,
  ) {
    this.state = new StateFile(stateDir, name, Type.Record(Type.String(), Type.Integer({ minimum: 0, maximum: 4096 })));
  }

  attach(uuid: string, dep: DeployableT): void {
    this.bound.set(uuid, dep);
  }

  detach(uuid: string): void {
    this.bound.delete(uuid);
  }

  restore(bound: readonly BoundHandle[]): string[] {
    for (const b of bound) this.bound.set(b.handleUuid, b.deployable);
    return bound.map((b) => b.handleUuid);
  }

  async set(address: string, count: number): Promise<{ address: string; numvfs: number }> {
    const attached = [...this.bound.values()].filter((d) => this.pfOf(d) === address);
    if (attached.length > 0) {
      throw new DriverError('driver.in_use', `${attached.length} VF(s) of ${address} are attached: detach them before changing its VF count`, {
        address,
        deployables: attached.map((d) => d.name),
      });
    }
    const dir = join(this.sysfsRoot, 'bus', 'pci', 'devices', address);
    const total = Number((await readFile(join(dir, 'sriov_totalvfs'), 'utf8').catch(() => '0')).trim());
    if (!Number.isInteger(count) || count < 0 || count > total) {
      throw new DriverError('driver.failed', `${address} takes 0 to ${total} VFs, not ${count}`, { reason: 'vf_count_invalid', address, total });
    }
    // The kernel refuses to change a non-zero count except through 0 (sysfs-bus-pci, sriov_numvfs).
    const now = await numvfs(dir);
    if (now !== count) {
      if (now !== 0 && count !== 0) await writeFile(join(dir, 'sriov_numvfs'), '0');
      await writeFile(join(dir, 'sriov_numvfs'), String(count));
    }
    await this.state.update((cur) => ({ ...cur, [address]: count }));
    return { address, numvfs: count };
  }

  async reapply(): Promise<{ address: string; numvfs: number }[]> {
    const out = [];
    for (const [address, count] of Object.entries(await this.state.read())) if (typeof count === 'number') out.push(await this.set(address, count));
    return out;
  }
}

async function numvfs(pfDir: string): Promise<number> {
  return Number((await readFile(join(pfDir, 'sriov_numvfs'), 'utf8')).trim());
}

/**
 * What a reboot can lose of the PF/VF split: each PF's VF count now (`sriov_numvfs`; a VF count
 * the kernel was not told again after a boot is 0). A VF discovery found exists, and a PF is
 * always there, so every handle reported is present: only the count is ever lost.
 */
export async function observeVfCounts(sysfsRoot: string, devices: readonly DriverDevice[]): Promise<Observation> {
  const out: Observation = { deployables: [], present: [], cards: [] };
  for (const d of devices) {
    for (const dep of d.deployables) {
      out.deployables.push(dep.uuid);
      out.present.push(...dep.attachHandles.map((h) => h.uuid));
    }
    const a = JSON.parse(d.controlPath.info) as Record<string, string>;
    out.cards.push({
      deviceUuid: d.uuid,
      vfCount: await numvfs(join(sysfsRoot, 'bus', 'pci', 'devices', `${a.domain}:${a.bus}:${a.device}.${a.function}`)).catch(() => 0),
    });
  }
  return out;
}
