import { v2Error } from './errors.js';

const STANDARD_RCS = new Set(['FPGA', 'GPU', 'VGPU', 'PGPU', 'CUSTOM_QAT', 'CUSTOM_NIC', 'CUSTOM_SSD']);
const NAME_RE = /^[a-zA-Z0-9-_]+$/;

const bad = (msg: string) => v2Error('request.invalid', msg);

/** Cyborg's device-profile name rule. */
export function checkName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw bad('DeviceProfile name needed.');
  if (!NAME_RE.test(name)) throw bad(`Device profile name ${name} must match ${NAME_RE.source}`);
  return name;
}

/**
 * Validates and normalizes request groups the way Cyborg does: keys `resources:<RC>` (an
 * integer count), `trait:CUSTOM_*` (`required` | `forbidden`) or `accel:<key>`; names after
 * the colon are trimmed; values are stored as strings. Order of groups and keys is kept.
 */
export function normalizeGroups(groups: unknown): Record<string, string>[] {
  if (!Array.isArray(groups) || groups.length === 0) throw bad('DeviceProfile needs groups field.');
  return groups.map((g, i) => {
    if (!g || typeof g !== 'object' || Array.isArray(g)) throw bad(`Device profile group ${i} must be an object of string keys and values`);
    const out: Record<string, string> = {};
    for (const [rawKey, rawValue] of Object.entries(g as Record<string, unknown>)) {
      if (rawValue === null || typeof rawValue === 'object') throw bad(`Device profile group value for ${rawKey} must be a string`);
      const value = String(rawValue);
      const m = /^(resources|trait|accel):(.*)$/.exec(rawKey);
      if (!m) throw bad('Device profile group keys must be of the form ^(resources:|trait:|accel:)');
      const [, prefix, rest] = m;
      const name = rest!.trim();
      if (prefix === 'resources') {
        if (!STANDARD_RCS.has(name) && !name.startsWith('CUSTOM_')) throw bad(`Resource class ${name} is neither standard nor CUSTOM_*`);
        if (!/^\s*\d+\s*$/.test(value)) throw bad(`Resources number ${value} is invalid`);
        out[`resources:${name}`] = String(Number(value));
      } else if (prefix === 'trait') {
        if (!name.startsWith('CUSTOM_')) throw bad(`Unsupported trait name format ${name}, should start with CUSTOM_`);
        if (value !== 'required' && value !== 'forbidden') throw bad(`Unsupported trait value ${value}, should be required or forbidden`);
        out[`trait:${name}`] = value;
      } else {
        if (name === '') throw bad('Device profile group key accel: needs a name');
        out[`accel:${name}`] = value;
      }
    }
    return out;
  });
}

/**
 * The ARQs a profile's groups make for one request, refused (400 naming `groups`) beyond `max`
 * (config `api.maxArqsPerRequest`): one request must not create thousands of records.
 */
export function checkArqTotal(groups: Record<string, string>[], max: number): number {
  const total = groups.reduce((n, g) => n + arqCount(g), 0);
  if (total > max) {
    throw v2Error('request.invalid', `Device profile groups ask for ${total} accelerator requests; at most ${max} per request`, {
      field: 'groups',
      limit: max,
    });
  }
  return total;
}

/**
 * How many ARQs one group asks for: the sum of its `resources:` counts; a Xilinx FPGA group
 * takes two per FPGA (management and user PF), as in Cyborg.
 */
export function arqCount(group: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(group)) if (k.startsWith('resources:')) n += Number(v);
  if (group['trait:CUSTOM_FPGA_XILINX'] === 'required') n += Number(group['resources:FPGA'] ?? 0);
  return n;
}
