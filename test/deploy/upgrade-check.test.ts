import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const dir = mkdtempSync(join(tmpdir(), 'cyborg-upgrade-'));

/** `cyborg <argv>` as an operator runs it: a process of its own, its exit code and output. */
async function cyborg(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(TSX, [join(ROOT, 'cli/main.ts'), ...argv], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function conf(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe.skipIf(!svc.postgres)('an upgrade, checked as cyborg-status checks it', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let file: string;
  beforeAll(async () => {
    db = await freshDatabase('upgrade', { migrated: false });
    file = conf('cyborg.conf', `[database]\nconnection = ${db.url.replace('postgres://', 'postgresql+psycopg2://')}\n`);
  });
  afterAll(async () => db?.drop());

  it('a database the new code has not migrated: db migrate --check exits 1 and upgrade-check fails (2)', async () => {
    const check = await cyborg('db', 'migrate', '--check', '--config-file', file);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/^not at the code's schema; pending: Migration\d+_initial, /);
    const status = await cyborg('status', 'upgrade-check', '--config-file', file);
    expect(status.code).toBe(2);
    expect(status.stdout).toMatch(/Check: Database schema\s*│?\s*\n.*Result: Failure/);
    expect(status.stdout).toContain('Run: cyborg db migrate');
  });

  it('after cyborg db migrate: --check exits 0 and upgrade-check succeeds (0)', async () => {
    expect((await cyborg('db', 'migrate', '--config-file', file)).code).toBe(0);
    const check = await cyborg('db', 'migrate', '--check', '--config-file', file);
    expect(check).toMatchObject({ code: 0, stdout: "at the code's schema\n" });
    const status = await cyborg('status', 'upgrade-check', '--config-file', file);
    expect(status.code).toBe(0);
    expect(status.stdout).not.toMatch(/Result: (Warning|Failure)/);
  });

  it('an option nothing reads is a warning (1); an unreachable Placement a failure (2); a bad value a failure (2)', async () => {
    const unknown = conf('unknown.conf', `[database]\nconnection = ${db.url}\n[api]\napi_workers = 4\n`);
    const warned = await cyborg('status', 'upgrade-check', '--config-file', unknown);
    expect(warned.code).toBe(1);
    expect(warned.stdout).toContain('unknown option api_workers');
    const placement = conf('placement.conf', `[database]\nconnection = ${db.url}\n[placement]\nendpoint_override = http://127.0.0.1:9\n`);
    const down = await cyborg('status', 'upgrade-check', '--config-file', placement);
    expect(down.code).toBe(2);
    expect(down.stdout).toMatch(/Check: Placement API[\s\S]*Result: Failure[\s\S]*cannot reach http:\/\/127\.0\.0\.1:9/);
    const bad = conf('bad.conf', '[api]\nport = many\n');
    const invalid = await cyborg('status', 'upgrade-check', '--config-file', bad);
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toContain(`${bad} [api] port: "many" is not an integer`);
  });
});
