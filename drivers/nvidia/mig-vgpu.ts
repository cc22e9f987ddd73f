import { join } from 'node:path';
import { DriverError } from '../../errors/index.js';
import { readPciFunction, type MdevType, type PciFunction } from '../generic/index.js';
import { devDir, exists } from './vgpu.js';

/**
 * MIG slices for VMs, NVIDIA's way (vGPU software user guide, "MIG-backed vGPUs"): a MIG-backed
 * vGPU type — named `<board>-<slices>-<GB>C`, `ME` at the end for a `+me` profile
 * (`GRID A100-3-20C` for a `3g.20gb` instance, `NVIDIA H100XM-1-10C` for a `1g.10gb`) — is
 * offered on the GPU's SR-IOV VFs while MIG is on, with one instance available per free GPU
 * instance of its profile; the mdev created from it is placed by the vGPU manager on such a GPU
 * instance. That mdev, made with the attach handle's uuid, is what Nova's libvirt driver puts in
 * the guest's `<hostdev type='mdev'>`.
 */

export interface MigVgpuParent {
  /** The VF the mdev is made on. */
  vf: string;
  /** Its mdev type id (`nvidia-476`) and name (`GRID A100-3-20C`). */
  type: string;
  typeName: string;
}

/** `3g.20gb` → `3-20C`, `1g.5gb+me` → `1-5CME`: the suffix of the MIG-backed vGPU type's name; undefined for profiles no vGPU type backs. */
export function migVgpuSuffix(profile: string): string | undefined {
  const m = /^(\d+)g\.(\d+)gb(\+me)?$/i.exec(profile.replace(/^MIG[\s-]+/i, '').trim());
  return m ? `${m[1]}-${m[2]}C${m[3] ? 'ME' : ''}` : undefined;
}

/** Whether an mdev type's name (`GRID A100-3-20C`) is the MIG-backed vGPU of `suffix` (`3-20C`). */
function backs(type: MdevType, suffix: string): boolean {
  const word = type.name.trim().split(/\s+/).at(-1) ?? '';
  return word.toUpperCase().endsWith(`-${suffix}`) && /^[A-Z0-9]+-\d+-\d+C(ME)?$/i.test(word);
}

/** Whether an mdev type is the MIG-backed vGPU of `profile` (`GRID A100-3-20C` backs `3g.20gb`). */
export function backsProfile(type: MdevType, profile: string): boolean {
  const suffix = migVgpuSuffix(profile);
  return suffix !== undefined && backs(type, suffix);
}

/**
 * How many GPU instances of `profile` mdevs hold that are none of `ours` (an mdev another agent
 * made — an OpenStack Cyborg agent before the host moved here, a person): each takes a GPU
 * instance the vGPU manager will not give to a bind, so that many fewer can be offered.
 */
export function foreignMigVgpus(vfs: readonly PciFunction[], profile: string, ours: ReadonlySet<string>): number {
  let n = 0;
  for (const vf of vfs) for (const t of vf.mdevTypes) if (backsProfile(t, profile)) n += t.devices.filter((u) => !ours.has(u)).length;
  return n;
}

const notServable = (pf: string, profile: string, gpuInstanceId: string, why: string): DriverError =>
  new DriverError('driver.failed', `GPU ${pf}, MIG ${profile} (GPU instance ${gpuInstanceId}): ${why}`, {
    reason: 'mig_not_servable',
    address: pf,
    profile,
    gpuInstanceId,
  });

/**
 * The VF and MIG-backed type on which a vGPU of `profile` can be made now, or a `mig_not_servable`
 * DriverError saying why none can: the GPU has no VFs, its vGPU manager offers no MIG-backed type
 * for the profile (none installed, or vGPU 17+, where VFs carry `nvidia/creatable_vgpu_types` and
 * no mdev types), or every instance of the type is taken.
 */
export async function migVgpuParent(root: string, pf: string, profile: string, gpuInstanceId: string): Promise<MigVgpuParent> {
  const suffix = migVgpuSuffix(profile);
  if (!suffix) throw notServable(pf, profile, gpuInstanceId, 'NVIDIA offers no MIG-backed vGPU type for this profile');
  const gpu = await readPciFunction(root, pf);
  if (!gpu || gpu.virtfns.length === 0) {
    throw notServable(
      pf,
      profile,
      gpuInstanceId,
      "the GPU has no SR-IOV VFs, where MIG-backed vGPUs are made (enable them: NVIDIA's sriov-manage -e, docs/drivers.md MIG)",
    );
  }
  let offered: string | undefined;
  let vendorVfio = false;
  for (const address of gpu.virtfns) {
    const vf = await readPciFunction(root, address);
    if (!vf) continue;
    const type = vf.mdevTypes.find((t) => backs(t, suffix));
    if (!type) {
      vendorVfio ||= await exists(join(devDir(root, address), 'nvidia', 'creatable_vgpu_types'));
      continue;
    }
    offered ??= type.name;
    if (type.availableInstances > 0 && vf.mdevTypes.every((t) => t.devices.length === 0)) return { vf: address, type: type.id, typeName: type.name };
  }
  if (offered)
    throw notServable(
      pf,
      profile,
      gpuInstanceId,
      `no VF can take another ${offered} now (each GPU instance of the profile already backs a vGPU, or each VF holds one)`,
    );
  if (vendorVfio) {
    throw notServable(
      pf,
      profile,
      gpuInstanceId,
      'the VFs carry no mdev types (vGPU 17+, the vendor VFIO layout): give VMs MIG slices through [gpu_devices] enabled_vgpu_types on the VFs instead (docs/drivers.md MIG)',
    );
  }
  throw notServable(pf, profile, gpuInstanceId, `no VF offers a MIG-backed vGPU type for ${profile} (is NVIDIA's vGPU manager installed? docs/drivers.md MIG)`);
}
