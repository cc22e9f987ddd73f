/**
 * NVIDIA numbers its Xid events from 1 (docs.nvidia.com/deploy/xid-errors, "Analyzing Xid Errors
 * with the Xid Catalog"); the catalogue has grown past 150 with each GPU generation, so a code up
 * to XID_MAX is taken as one of its events, and anything else in a policy is a typo.
 */
export const XID_MAX = 199;

const LISTS = [
  ['xidFatal', 'xid_fatal'],
  ['xidTransient', 'xid_transient'],
  ['xidIgnored', 'xid_ignored'],
] as const;

/**
 * What the `[gpu_devices] xid_*` lists cannot say alone: every code is an Xid code, and no code
 * is named in two of them. Each problem names the option (and where it was set).
 */
export function checkXidPolicy(
  gpu: { xidFatal: readonly string[]; xidTransient: readonly string[]; xidIgnored: readonly string[] },
  source: Map<string, string>,
): string[] {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  for (const [key, name] of LISTS) {
    const where = source.get(`gpu.${key}`) ?? `[gpu_devices] ${name}`;
    for (const raw of gpu[key]) {
      const code = Number(raw);
      if (!Number.isInteger(code) || code < 1 || code > XID_MAX) {
        problems.push(`${where}: ${raw} is not an Xid code of NVIDIA's catalogue (1 to ${XID_MAX})`);
        continue;
      }
      const other = seen.get(code);
      if (other !== undefined && other !== name) problems.push(`${where}: Xid ${code} is also in [gpu_devices] ${other} (one class per code)`);
      seen.set(code, name);
    }
  }
  return problems;
}
