import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { OPTIONS } from '../../config/options.js';

/**
 * docs/drivers.md tells operators what to write in cyborg.conf: every `[section] option` it
 * names must be one the loader reads (config/options.ts), or the page promises a setting nobody
 * can set. Later names of a list (`[gpu_devices] xid_fatal`, `xid_transient`) count too.
 */
const doc = readFileSync(new URL('../../docs/drivers.md', import.meta.url), 'utf8');

/** `[section] name` and the bare `name`s listed after it in the same cell or sentence. */
function namedSettings(text: string): { section: string; name: string }[] {
  const out: { section: string; name: string }[] = [];
  for (const m of text.matchAll(/`\[([^\]`]+)\] ([a-z_]+)`((?:(?:,| and| or|,? \+ each) `[a-z_]+`)*)/g)) {
    out.push({ section: m[1]!, name: m[2]! });
    for (const more of m[3]!.matchAll(/`([a-z_]+)`/g)) out.push({ section: m[1]!, name: more[1]! });
  }
  return out;
}

describe('docs/drivers.md names only settings that exist', () => {
  const known = new Set(OPTIONS.map((o) => `[${o.section}] ${o.name}`));
  // Options of other programs that the page mentions as theirs, not ours to read.
  const foreign = new Set(['[pci] passthrough_whitelist', '[pci] device_spec']);

  it('every [section] option it names is a cyborg.conf option', () => {
    const named = namedSettings(doc);
    expect(named.length).toBeGreaterThan(20);
    const unknown = named.map((s) => `[${s.section}] ${s.name}`).filter((s) => !known.has(s) && !foreign.has(s));
    expect(unknown).toEqual([]);
  });

  it('the known-id lists are validated at start-up, naming the option', () => {
    expect(() => loadConfig({}, { CYBORG_NIC_KNOWN_IDS: '8086:1593,E810' }, {})).toThrow(/nic_devices.*known_ids|CYBORG_NIC_KNOWN_IDS/);
    const c = loadConfig({}, { CYBORG_NIC_KNOWN_IDS: '8086:1593', CYBORG_QAT_KNOWN_IDS: '8086:4940', CYBORG_FPGA_INTEL_KNOWN_IDS: '8086:0b2b' }, {});
    expect([c.nic.knownIds, c.qat.knownIds, c.fpga.intelKnownIds]).toEqual([['8086:1593'], ['8086:4940'], ['8086:0b2b']]);
  });
});
