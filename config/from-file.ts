import { ConfigError } from './errors.js';
import type { IniFile } from './ini.js';
import { optionValue } from './coerce.js';
import { OPTIONS } from './options.js';
import { set, type Tree } from './tree.js';
import { distance, refuseUnknownOption } from './strict-sections.js';

/** The file's options as a config tree; unknown ones are named in a warning. */
export function fromFile(ini: IniFile, file: string, source: Map<string, string>, warn: (m: string) => void): Tree {
  const out: Tree = {};
  for (const [section, options] of ini) {
    const known = OPTIONS.filter((o) => o.section === section);
    if (known.length === 0 && namedSection(out, section, options, file, source, warn)) continue;
    if (known.length === 0) {
      // A section Cyborg's own cyborg.conf may carry is named and passed over; any other is a
      // typo whose options would all be lost ([databse] would leave the conductor in memory).
      if (!FOREIGN_SECTIONS.has(section) && options.size > 0)
        throw new ConfigError(`invalid configuration: ${file}: unknown section [${section}]${nearest(section)}`);
      if (options.size > 0) warn(`${file}: unknown section [${section}] (ignored)`);
      continue;
    }
    for (const [name, values] of options) {
      const spec = known.find((o) => o.name === name);
      if (!spec) {
        refuseUnknownOption(
          file,
          section,
          name,
          known.map((o) => o.name),
        );
        warn(`${file} [${section}]: unknown option ${name} (ignored)`);
        continue;
      }
      // As an empty environment variable: an option written with no value keeps its default.
      if (values.every((v) => v.trim() === '')) continue;
      const where = `${file} [${section}] ${name}`;
      set(out, spec.path, optionValue(spec, values, where, true));
      source.set(spec.path, where);
    }
  }
  return out;
}

/**
 * Sections of OpenStack's services this implementation does not read, which a cyborg.conf
 * written for Cyborg may hold: warned about and passed over, not refused.
 */
const FOREIGN_SECTIONS = new Set([
  'cinder',
  'cors',
  'healthcheck',
  'keystone',
  'oslo_concurrency',
  'oslo_messaging_amqp',
  'oslo_messaging_kafka',
  'oslo_messaging_notifications',
  'oslo_messaging_rabbit',
  'oslo_middleware',
  'oslo_reports',
  'profiler',
  'service_user',
  'ssl',
  'cache',
  'fpga_devices',
  'qat_devices',
  'matchmaker_redis',
]);

/** ` (did you mean [x]?)` for a section a letter or two from one this loader reads. */
function nearest(section: string): string {
  const names = [...new Set(OPTIONS.map((o) => o.section))].filter((n) => !n.includes('<'));
  const best = names.map((n) => ({ n, d: distance(section.toLowerCase(), n.toLowerCase()) })).sort((a, b) => a.d - b.d)[0];
  return best && best.d <= 2 ? ` (did you mean [${best.n}]?)` : ` (sections read: ${names.join(', ')})`;
}

const NIC_TYPE_OPTIONS: Record<string, string> = { physical_device_mappings: 'physicalDeviceMappings', function_device_mappings: 'functionDeviceMappings' };

/**
 * Sections named after a value of another option, as Cyborg lays them out: `[vgpu_<type>]` for
 * each of `[gpu_devices] enabled_vgpu_types`, and `[<nic type>]` (any other section holding a
 * NIC mapping) for each of `[nic_devices] enabled_nic_types`. False when `section` is neither.
 */
function namedSection(
  out: Tree,
  section: string,
  options: Map<string, string[]>,
  file: string,
  source: Map<string, string>,
  warn: (m: string) => void,
): boolean {
  const vgpu = /^vgpu_(.+)$/.exec(section);
  const isNic = !vgpu && [...options.keys()].some((n) => n in NIC_TYPE_OPTIONS);
  if (!vgpu && !isNic) return false;
  for (const [name, values] of options) {
    const field = vgpu ? (name === 'device_addresses' ? 'device_addresses' : undefined) : NIC_TYPE_OPTIONS[name];
    if (field && values.every((v) => v.trim() === '')) continue;
    if (!field) {
      warn(`${file} [${section}]: unknown option ${name} (ignored)`);
      continue;
    }
    const keys = vgpu ? ['gpu', 'vgpuDeviceAddresses', vgpu[1]!] : ['nic', 'types', section, field];
    let t = out;
    // Defaults are not filled inside a record's values: a NIC type gets both lists here.
    for (const k of keys.slice(0, -1)) t = (t[k] ??= k === section ? { physicalDeviceMappings: [], functionDeviceMappings: [] } : {}) as Tree;
    t[keys.at(-1)!] = values
      .flatMap((v) => v.split(/[,\n]/))
      .map((x) => x.trim())
      .filter(Boolean);
    source.set(keys.join('.'), `${file} [${section}] ${name}`);
  }
  return true;
}
