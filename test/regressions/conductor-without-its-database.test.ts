/**
 * Issue 39: `[database] conection = …` (a misspelt option) logged a warning and the conductor ran
 * with its state in memory only, joining the fleet. Now an unknown option of `[database]` stops
 * the program naming the option meant (config/strict-sections.ts), and a conductor without a
 * database refuses to start; the in-memory journal is only for the one who names it (`memory://`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, StartupError } from '../../config/index.js';
import { startConductor } from '../../roles/conductor.js';
import { cyborgProcess } from '../cli/spawn.js';

const conf = (text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'cyborg-db-')), 'cyborg.conf');
  writeFileSync(path, text);
  return path;
};

describe('a conductor without its database', () => {
  it('refuses a misspelt [database] option, naming the one meant', () => {
    const path = conf('[database]\nconection = postgresql://cyborg@db/cyborg\n');
    expect(() => loadConfig({}, {}, { configFiles: [path] })).toThrow(
      new ConfigError(`invalid configuration: ${path} [database]: unknown option conection (did you mean connection?)`),
    );
    // Other sections still warn and go on, as oslo.config does.
    const warned: string[] = [];
    loadConfig({}, {}, { configFiles: [conf('[api]\napi_workers = 4\n')], onWarning: (m) => warned.push(m) });
    expect(warned).toEqual([expect.stringMatching(/\[api\]: unknown option api_workers \(ignored\)$/)]);
  });

  it('does not start without one, and starts in memory only when memory:// is named', async () => {
    const config = loadConfig({}, {});
    await expect(startConductor(config, pino({ level: 'silent' }))).rejects.toThrow(StartupError);
    const r = await cyborgProcess(['conductor', '--nats', 'nats://127.0.0.1:1', '--no-leases', '--metrics-port', '-1'], { env: { DATABASE_URL: '' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cyborg: a conductor needs a database: set [database] connection (DATABASE_URL, --database)');
    expect(loadConfig({}, { DATABASE_URL: 'memory://' }).databaseUrl).toBe('memory://');
    expect(() => loadConfig({}, { DATABASE_URL: 'mysql://root@db/cyborg' })).toThrow(/DATABASE_URL/);
  });
});
