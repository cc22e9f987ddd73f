/**
 * A misspelt `CYBORG_POLICY_FILE=/etc/cyborg/polcy.yaml` booted with the defaults in code and an
 * info line, so the operator believed their overrides applied. oslo.policy tolerates a missing
 * file and so do we, but now with a warn line naming the path and saying the defaults apply. A file
 * that is there and malformed stops the start in one line (it ended in a stack trace).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { apiAuthFromConfig } from '../../api/auth/setup.js';
import { ConfigError, loadConfig } from '../../config/index.js';

/** A logger whose records the test reads back. */
function recording(): { log: pino.Logger; records: { level: number; msg: string; policyFile?: string }[] } {
  const records: { level: number; msg: string; policyFile?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { log, records };
}

describe('an operator points [oslo_policy] policy_file at a file', () => {
  it('that is not there: the api starts on the defaults in code, and a warn line names the path', () => {
    const { log, records } = recording();
    const config = loadConfig({}, { CYBORG_POLICY_FILE: '/etc/cyborg/polcy.yaml' });
    const auth = apiAuthFromConfig(config, log);
    auth.close();
    expect(records.filter((r) => r.level === 40)).toEqual([
      expect.objectContaining({
        policyFile: '/etc/cyborg/polcy.yaml',
        msg: 'environment variable CYBORG_POLICY_FILE = /etc/cyborg/polcy.yaml: no such file; the policy defaults in code apply (fix the path, or unset the option)',
      }),
    ]);
  });

  it('when none is set: no warning, the defaults in code are simply the policy', () => {
    const { log, records } = recording();
    apiAuthFromConfig(loadConfig({}, {}), log).close();
    expect(records.filter((r) => r.level >= 40)).toEqual([]);
  });

  it('that is there but not YAML: the start stops in one line naming the option and the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-policy-'));
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, 'x: [\n');
    writeFileSync(join(dir, 'cyborg.conf'), `[oslo_policy]\npolicy_file = ${file}\n`);
    const config = loadConfig({}, {}, { configFiles: [join(dir, 'cyborg.conf')] });
    const { log } = recording();
    let err: unknown;
    try {
      apiAuthFromConfig(config, log).close();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^invalid configuration: ${dir}/cyborg\\.conf \\[oslo_policy\\] policy_file = ${file}: policy file ${file} is not valid YAML: [^\\n]*; fix the file, or unset the option for the defaults in code$`,
      ),
    );
  });
});
