/** The trait prefix of an FPGA's function, as Cyborg names it. */
export const FUNCTION_TRAIT_PREFIX = 'CUSTOM_FPGA_FUNCTION_ID';

/**
 * One spelling of a function id, whoever wrote it: an AFU id (a GUID, as OPAE's sysfs `afu_id`
 * gives it — 32 hex digits — or as a profile's `accel:function_id` or Glance's property often
 * writes it, with dashes, braces or `0x`) is its 32 hex digits in upper case; anything else is
 * upper-cased with every character Placement refuses in a trait turned into `_`.
 */
export function canonicalFunctionId(id: string): string {
  const hex = id
    .trim()
    .replace(/^\{|\}$/g, '')
    .replace(/^0x/i, '');
  if (/^[0-9a-f]{32}$/i.test(hex.replace(/-/g, '')) && /^[0-9a-f-]+$/i.test(hex)) return hex.replace(/-/g, '').toUpperCase();
  return id
    .trim()
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');
}

/**
 * `CUSTOM_FPGA_FUNCTION_ID_<DRIVER>_<FUNCTION>`: the trait of one function, the same whether
 * discovery read it from the card or a programming set it from a profile (Cyborg writes `-` as
 * `_-`, which Placement rejects; here every character outside `[A-Z0-9_]` becomes `_`).
 */
export function functionTrait(driver: string, functionId: string): string {
  return `${FUNCTION_TRAIT_PREFIX}_${driver.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_${canonicalFunctionId(functionId)}`;
}
