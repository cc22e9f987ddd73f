import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DriverError } from '../../errors/index.js';
import { handleOf, mdevJson, pciJson } from '../cyborg-report.js';
import type { PciFunction } from '../generic/index.js';
import { vgpuTypeName } from './names.js';
import type { AttachHandleT, DeployableT } from '../../model/index.js';

/**
 * vGPUs of one physical GPU, in the two layouts NVIDIA's vGPU manager uses:
 * - mediated devices (`mdev_supported_types/<nvidia-N>/{name,available_instances,device_api}`),
 *   on the PF (Turing and older) or on each SR-IOV VF (Ampere and newer, one mdev per VF);
 * - vGPU 17+ without mdev: each VF has `nvidia/creatable_vgpu_types` (`558 : NVIDIA A10-4Q`
 *   lines) and `nvidia/current_vgpu_type` (0, or the id written to make that VF a vGPU).
 */

export interface VgpuOffer {
  /** Cyborg's type name for traits (`A10_4Q`). */
  typeName: string;
  handles: AttachHandleT[];
}

export const devDir = (root: string, address: string): string => join(root, 'bus', 'pci', 'devices', address);

/** `nvidia-558` → 558: the numeric id the `nvidia/` files use. */
export function typeNumber(type: string): number {
  const m = /^(?:nvidia-)?(\d+)$/.exec(type);
  if (!m) throw new DriverError('driver.failed', `vGPU type ${type} is not nvidia-<number>`, { reason: 'vgpu_type_invalid', type });
  return Number(m[1]);
}

/** The `max_instance=N` of an mdev type's description (NVIDIA's: `num_heads=4, …, max_instance=8`): how many the whole GPU takes. */
export function maxInstance(description: string): number | undefined {
  const m = /(?:^|[,\s])max_instance=(\d+)/.exec(description);
  return m ? Number(m[1]) : undefined;
}

/** Reads a `creatable_vgpu_types` file: id → profile name. */
export function parseCreatable(text: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s*:\s*(.+?)\s*$/.exec(line);
    if (m) out.set(Number(m[1]), m[2]!);
  }
  return out;
}

async function read(path: string): Promise<string | null> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return null;
  }
}

/** The vGPUs of `type` a PF offers: on itself, else on its VFs. Throws when the type is not there. */
export async function vgpuOffer(root: string, host: string, name: string, pf: PciFunction, vfs: PciFunction[], type: string): Promise<VgpuOffer> {
  const own = pf.mdevTypes.find((t) => t.id === type);
  if (own) {
    const n = own.availableInstances + own.devices.length;
    const handles = Array.from({ length: n }, (_, i) => handleOf(host, name, 'MDEV', mdevJson(pf.address, type, `${type}_${i}`)));
    return { typeName: vgpuTypeName(own.name), handles: adoptMdevs(handles, own.devices) };
  }
  const handles: AttachHandleT[] = [];
  let typeName: string | undefined;
  // mdevs on VFs (vGPU 13–16): a VF each, but never more than the type's max_instance per GPU;
  // VFs that hold one already come first, so a capacity cut never drops a handle in use.
  const onVfs: { vf: PciFunction; t: PciFunction['mdevTypes'][number] }[] = [];
  // A VF configured for the type itself (`device_addresses` naming VFs, Cyborg's way), in the
  // vGPU 17+ layout: the VF is its own vGPU.
  for (const vf of vfs.length === 0 && pf.physfn !== null ? [pf] : vfs) {
    const t = vf.mdevTypes.find((m) => m.id === type);
    if (t) {
      typeName ??= vgpuTypeName(t.name);
      onVfs.push({ vf, t });
      continue;
    }
    const creatable = await read(join(devDir(root, vf.address), 'nvidia', 'creatable_vgpu_types'));
    if (creatable === null) continue;
    const id = typeNumber(type);
    const names = parseCreatable(creatable);
    const current = Number((await read(join(devDir(root, vf.address), 'nvidia', 'current_vgpu_type'))) ?? 0);
    if (names.has(id)) typeName ??= vgpuTypeName(names.get(id)!);
    if (names.has(id) || current === id) handles.push(handleOf(host, name, 'PCI', pciJson(vf.address)));
  }
  const max = Math.min(...onVfs.map(({ t }) => maxInstance(t.description) ?? Infinity));
  const ranked = [...onVfs.filter(({ t }) => t.devices.length > 0), ...onVfs.filter(({ t }) => t.devices.length === 0)];
  let left = max;
  for (const { vf, t } of ranked) {
    const mine: AttachHandleT[] = [];
    for (let i = 0; i < t.availableInstances + t.devices.length && left > 0; i++, left--)
      mine.push(handleOf(host, name, 'MDEV', mdevJson(vf.address, type, `${type}_${i}`)));
    handles.push(...adoptMdevs(mine, t.devices));
  }
  handles.sort((a, b) => (a.attachInfo < b.attachInfo ? -1 : a.attachInfo > b.attachInfo ? 1 : 0));
  if (handles.length === 0 || typeName === undefined) {
    throw new DriverError('driver.failed', `GPU ${pf.address} offers no vGPU type ${type} (see [vgpu_${type}] device_addresses)`, {
      reason: 'vgpu_type_unsupported',
      address: pf.address,
      type,
    });
  }
  return { typeName, handles };
}

/**
 * Mdevs this driver did not make — an OpenStack Cyborg agent's, made before the host moved here,
 * with Cyborg's own handle uuids — keep their uuid as their handle's: in Cyborg a handle's uuid
 * is its mdev's, and it is what the instance's guest names. Each takes, from the last, a handle
 * whose own mdev does not exist; the conductor adopts it for the guest that holds it. Once the
 * mdev is removed, the handle gets its own uuid back.
 */
export function adoptMdevs(handles: AttachHandleT[], existing: readonly string[]): AttachHandleT[] {
  const ours = new Set(handles.map((h) => h.uuid));
  const foreign = existing.filter((u) => !ours.has(u)).sort();
  if (foreign.length === 0) return handles;
  const made = new Set(existing);
  const out = [...handles];
  for (let i = out.length - 1; i >= 0 && foreign.length > 0; i--) {
    if (!made.has(out[i]!.uuid)) out[i] = { ...out[i]!, uuid: foreign.shift()! };
  }
  return out;
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function write(path: string, text: string, what: string): Promise<void> {
  try {
    await writeFile(path, text);
  } catch (err) {
    throw new DriverError('driver.failed', `${what}: cannot write ${path}: ${(err as Error).message}`, { reason: 'sysfs_write', path }, { cause: err });
  }
}

/** Whether the mdev `uuid` exists (after a reboot it does not). */
export function mdevExists(root: string, parent: string, uuid: string): Promise<boolean> {
  return exists(join(devDir(root, parent), uuid)).then((own) => own || exists(join(root, 'bus', 'mdev', 'devices', uuid)));
}

/** Creates the mdev as Cyborg does: the attach handle's uuid written to the type's `create`. Idempotent. */
export async function createMdev(root: string, parent: string, type: string, uuid: string): Promise<boolean> {
  if (await mdevExists(root, parent, uuid)) return false;
  await write(join(devDir(root, parent), 'mdev_supported_types', type, 'create'), uuid, `create mdev ${uuid}`);
  return true;
}

/** Removes the mdev; one already gone is fine. */
export async function removeMdev(root: string, parent: string, uuid: string): Promise<void> {
  for (const dir of [join(devDir(root, parent), uuid), join(root, 'bus', 'mdev', 'devices', uuid)]) {
    if (await exists(join(dir, 'remove'))) {
      await write(join(dir, 'remove'), '1', `remove mdev ${uuid}`);
      return;
    }
  }
}

/** The vGPU type a VF is made now (vGPU 17+ layout; 0: none), undefined where it has no such file. */
export async function vfVgpuType(root: string, vf: string): Promise<number | undefined> {
  const text = await read(join(devDir(root, vf), 'nvidia', 'current_vgpu_type'));
  return text === null ? undefined : Number(text);
}

/** Makes a VF a vGPU of `type` (vGPU 17+ layout), or gives it back with 0. Idempotent. */
export async function setVfVgpuType(root: string, vf: string, type: number): Promise<boolean> {
  const file = join(devDir(root, vf), 'nvidia', 'current_vgpu_type');
  if (Number((await read(file)) ?? -1) === type) return false;
  await write(file, String(type), `vGPU type of ${vf}`);
  return true;
}

/** A VF configured for a vGPU type on its own (`[vgpu_<type>] device_addresses` naming VFs): its deployable. */
export interface VfVgpu {
  vf: PciFunction;
  type: string;
  deployable: DeployableT;
}

/**
 * The deployables of one GPU's VFs configured one by one for the same type, cut to what the GPU
 * can make: the type's `max_instance` (its description, where the VFs carry mdev types) in all,
 * VFs that hold a vGPU first, then in address order. A VF past it keeps its deployable with no
 * handle (Placement holds its one unit reserved), so nothing is offered that a bind could not
 * make, and it is offered again once a sibling's vGPU frees a place. The vGPU 17+ layout gives
 * no `max_instance` in sysfs: there each VF is offered while it lists the type as creatable.
 */
export function capVfVgpus(group: readonly VfVgpu[]): DeployableT[] {
  const typeOf = (g: VfVgpu) => g.vf.mdevTypes.find((t) => t.id === g.type);
  const max = Math.min(...group.map((g) => maxInstance(typeOf(g)?.description ?? '') ?? Infinity));
  if (!Number.isFinite(max)) return group.map((g) => g.deployable);
  const holds = (g: VfVgpu): boolean => (typeOf(g)?.devices.length ?? 0) > 0;
  const ranked = [...group.filter(holds), ...group.filter((g) => !holds(g))];
  const kept = new Map<VfVgpu, number>();
  let left = max;
  for (const g of ranked) {
    const n = Math.min(g.deployable.attachHandles.length, left);
    kept.set(g, n);
    left -= n;
  }
  return group.map((g) => {
    const n = kept.get(g)!;
    if (n === g.deployable.attachHandles.length) return g.deployable;
    return { ...g.deployable, attachHandles: g.deployable.attachHandles.slice(0, n), numAccelerators: n };
  });
}
