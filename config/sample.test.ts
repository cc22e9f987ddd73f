import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, type Role } from './index.js';
import { configSample } from './sample.js';

/** The sample with every option line uncommented, as an operator who keeps every default would. */
function uncommented(): string {
  return configSample()
    .split('\n')
    .map((l) => l.replace(/^#(\w[\w-]* = )/, '$1'))
    .join('\n');
}

describe('the config sample, valid as written', () => {
  it('has a value the loader accepts on every option line: uncommented in full, it loads for every role without a warning', () => {
    const text = uncommented();
    expect(text.split('\n').filter((l) => /^#\w+ = /.test(l))).toEqual([]);
    const file = join(mkdtempSync(join(tmpdir(), 'cyborg-sample-')), 'cyborg.conf');
    writeFileSync(file, text);
    for (const role of ['all-in-one', 'api', 'conductor', 'agent'] as Role[]) {
      const warnings: string[] = [];
      const config = loadConfig({}, {}, { role, configFiles: [file], onWarning: (m) => warnings.push(m) });
      expect(warnings).toEqual([]);
      // What the sample writes is each role's default: uncommenting changes nothing.
      expect(config).toEqual(loadConfig({}, {}, { role }));
    }
  });

  it('says in words a default that is not one value, above an empty value (which keeps the default)', () => {
    const sample = configSample();
    expect(sample).toContain("# Default: the machine's host name (left empty: the default)\n#host = \n");
    expect(sample).toContain('# Default: 6680 (the api role: 6666) (left empty: the default)\n#port = \n');
    expect(sample).not.toMatch(/^#\w+ = .*\(/m);
  });
});
