import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

function dir(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'cyborg-conf-d-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

describe('--config-dir: per-role drop-ins beside the shared cyborg.conf', () => {
  it("reads each *.conf by name after the config files: the conductor's own NATS user beats the shared one", () => {
    const shared = join(dir({}), 'cyborg.conf');
    writeFileSync(shared, '[DEFAULT]\ntransport_url = nats://nats.example:4222\n[nats]\nuser = cyborg\npassword = shared\n');
    const conductor = dir({ '10-nats.conf': '[nats]\nuser = conductor\npassword = c0nductor\n', '20-port.conf': '[conductor]\nmetrics_port = 9280\n' });
    const config = loadConfig({}, {}, { role: 'conductor', configFiles: [shared], configDirs: [conductor] });
    expect(config.nats).toMatchObject({ user: 'conductor', password: 'c0nductor' });
    expect(config.natsUrl).toBe('nats://nats.example:4222');
    expect(config.distributed.metricsPort).toBe(9280);
    expect(loadConfig({}, { CYBORG_CONFIG_DIR: conductor }, { role: 'conductor' }).nats.user).toBe('conductor');
  });

  it('refuses a directory that is not there, and one holding anything but *.conf (dot files aside), in one line', () => {
    expect(() => loadConfig({}, {}, { configDirs: ['/nonexistent/cyborg.conf.d'] })).toThrow(
      new ConfigError('invalid configuration: --config-dir /nonexistent/cyborg.conf.d: no such directory'),
    );
    const stray = dir({ '10-nats.conf': '[nats]\nuser = a\npassword = b\n', '10-nats.conf.bak': '', '.10-nats.conf.swp': '' });
    expect(() => loadConfig({}, {}, { configDirs: [stray] })).toThrow(
      new ConfigError(
        `invalid configuration: --config-dir ${stray}: 10-nats.conf.bak is not a *.conf file (only those are read; move it out of the directory)`,
      ),
    );
    const nested = dir({});
    mkdirSync(join(nested, 'old.conf'));
    expect(() => loadConfig({}, {}, { configDirs: [nested] })).toThrow(/old\.conf is not a \*\.conf file/);
  });
});
