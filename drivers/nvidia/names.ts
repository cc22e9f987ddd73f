import { customName } from '../cyborg-report.js';

/**
 * Names exactly as Cyborg's NVIDIA driver (`cyborg/accelerator/drivers/gpu/nvidia/sysinfo.py`)
 * gives them, and the MIG names this project adds in the same style (docs/drivers.md).
 */

/** Cyborg's `driver_name` for NVIDIA deployables. */
export const NVIDIA_DRIVER_NAME = 'NVIDIA';

/** `CUSTOM_NVIDIA_<PID>`: a whole GPU (pGPU), e.g. `CUSTOM_NVIDIA_1EB8`. */
export function pgpuTrait(productId: string): string {
  return `CUSTOM_NVIDIA_${productId.toUpperCase()}`;
}

/**
 * What Cyborg up to 10.0.0 named a pGPU (`gpu/utils.py` get_traits: `CUSTOM_GPU_<VENDOR>`,
 * `CUSTOM_GPU_PRODUCT_ID_<PID>`), reported beside today's name with `[gpu_devices] legacy_traits`
 * so that device profiles written then still match.
 */
export function legacyPgpuTraits(productId: string): string[] {
  return ['CUSTOM_GPU_NVIDIA', `CUSTOM_GPU_PRODUCT_ID_${productId.toUpperCase()}`];
}

/**
 * Cyborg's vGPU type name: the second word of the type's `name` file with `-` turned into `_`
 * (`GRID T4-2B` → `T4_2B`, `NVIDIA A10-4Q` → `A10_4Q`).
 */
export function vgpuTypeName(typeName: string): string {
  const word = typeName.trim().split(' ')[1] ?? typeName.trim();
  return word.replace(/-/g, '_').toUpperCase();
}

/** `CUSTOM_NVIDIA_<PID>_<VGPU TYPE>`, e.g. `CUSTOM_NVIDIA_1EB8_T4_2B`. */
export function vgpuTrait(productId: string, typeName: string): string {
  return `${pgpuTrait(productId)}_${vgpuTypeName(typeName)}`;
}

/** `1g.10gb+me` → `1G_10GB_ME`. */
export function migProfileName(profile: string): string {
  return profile
    .replace(/^MIG\s+/i, '')
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_');
}

/** Our extension: the trait of one MIG profile on one product, `CUSTOM_NVIDIA_2330_MIG_1G_10GB`. */
export function migTrait(productId: string, profile: string): string {
  return `${pgpuTrait(productId)}_MIG_${migProfileName(profile)}`;
}

/** Our extension: the resource class of one MIG profile, `CUSTOM_MIG_1G_10GB`. */
export function migResourceClass(profile: string): string {
  return customName('MIG', migProfileName(profile));
}
