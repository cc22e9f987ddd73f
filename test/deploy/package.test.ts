import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';
import { verifyUnits } from '../support/systemd.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const ROLES = ['api', 'conductor', 'agent'] as const;
// A Node >= 22 first on the PATH, as the README asks of the machine (the bin runs `node`).
const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
/** npm's answers when no registry can be reached (the install fetches the dependencies). */
const OFFLINE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENOTCACHED|ENETUNREACH/;

/** Where the install under `root` put a role's unit: its postinstall wrote its own Node and paths into it. */
const installedUnit = (role: string, root: string): string => join(root, 'opt', 'lib', 'node_modules', 'cyborg', 'deploy', 'systemd', `cyborg-${role}.service`);

/** An installed unit's command and environment, with /etc/cyborg and /var/lib/cyborg moved under `root`. */
function unitCommand(role: string, root: string): { argv: string[]; env: Record<string, string> } {
  const text = readFileSync(installedUnit(role, root), 'utf8').replace(/\/(etc|var\/lib)\/cyborg/g, (_m, d: string) => join(root, d.replace('/', '-')));
  const line = (key: string): string =>
    text
      .split('\n')
      .find((l) => l.startsWith(`${key}=`))!
      .slice(key.length + 1);
  const env = Object.fromEntries(
    line('Environment')
      .split(' ')
      .map((kv) => kv.split('=') as [string, string]),
  );
  return { argv: line('ExecStart').split(' '), env };
}

describe.skipIf(!svc.postgres || !svc.nats)('the production install, as the README writes it', () => {
  it(
    "from npm pack: npm install -g --prefix, cyborg --version, cyborg db migrate, the three units' commands as written, each /readyz 200",
    { timeout: 600_000 },
    async (ctx) => {
      const root = mkdtempSync(join(tmpdir(), 'cyborg-install-'));
      const procs: ChildProcess[] = [];
      const out: string[] = [];
      const db = await freshDatabase('install', { migrated: false });
      try {
        // The tarball: prepack builds dist/ (and the visualizer) and pins the lockfile's versions.
        const packed = await run('npm', ['pack', '--pack-destination', root], {
          cwd: ROOT,
          env: { ...process.env, PATH },
          timeout: 480_000,
          maxBuffer: 16 * 1024 * 1024,
        });
        const tarball = join(root, packed.stdout.trim().split('\n').at(-1)!);
        const installed = await run(
          'npm',
          ['install', '-g', '--prefix', join(root, 'opt'), '--engine-strict', '--prefer-offline', '--no-audit', '--no-fund', tarball],
          { cwd: root, env: { ...process.env, PATH }, timeout: 300_000 },
        ).catch((err: { stderr?: string }) => {
          if (OFFLINE.test(err.stderr ?? '')) ctx.skip(`no npm registry reachable for the package's dependencies: ${(err.stderr ?? '').split('\n')[0]}`);
          throw err;
        });
        expect(installed.stderr).not.toMatch(/EBADENGINE/);
        const cyborg = join(root, 'opt', 'bin', 'cyborg');
        expect((await run(cyborg, ['--version'], { env: { PATH } })).stdout).toBe(`${VERSION}\n`);

        const [api, ui, conductor, agent] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
        const etc = join(root, 'etc');
        for (const role of ROLES) mkdirSync(join(etc, `cyborg-${role}.conf.d`), { recursive: true });
        mkdirSync(join(root, 'var-lib'), { recursive: true });
        writeFileSync(join(etc, 'cyborg.conf'), `[DEFAULT]\ntransport_url = ${svc.nats}\n[database]\nconnection = ${db.url}\n`);
        writeFileSync(join(etc, 'cyborg-api.conf.d', '10-ports.conf'), `[api]\nport = ${api}\nui_port = ${ui}\n`);
        writeFileSync(join(etc, 'cyborg-conductor.conf.d', '10-ports.conf'), `[conductor]\nmetrics_port = ${conductor}\n`);
        writeFileSync(join(etc, 'cyborg-agent.conf.d', '10-agent.conf'), `[agent]\nmetrics_port = ${agent}\nenabled_drivers = fake_driver\n`);
        expect((await run(cyborg, ['db', 'migrate', '--config-file', join(etc, 'cyborg.conf')], { env: { PATH } })).stdout).toMatch(/^applied: /);

        if (existsSync('/usr/bin/systemd-analyze')) {
          const units = ROLES.map((role) => {
            const path = join(root, `cyborg-${role}.service`);
            writeFileSync(path, readFileSync(installedUnit(role, root), 'utf8'));
            return path;
          });
          expect(await verifyUnits(units)).toEqual([]);
        }

        const prefix = `inst${randomBytes(3).toString('hex')}`;
        for (const role of ROLES) {
          const { argv, env } = unitCommand(role, root);
          // The Node the install ran under (npm's, first on the PATH above), by its absolute path: not the first `node` on systemd's PATH.
          expect(argv.slice(0, 3)).toEqual([process.execPath, '--max-semi-space-size=16', join(root, 'opt', 'lib', 'node_modules', 'cyborg', 'cli', 'bin.js')]);
          const p = spawn(argv[0]!, argv.slice(1), {
            cwd: env.CYBORG_DATA_DIR,
            env: { ...env, PATH, HOME: root, CYBORG_SUBJECT_PREFIX: prefix },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          p.stdout!.on('data', (b: Buffer) => out.push(`${role}: ${b.toString()}`));
          p.stderr!.on('data', (b: Buffer) => out.push(`${role}: ${b.toString()}`));
          procs.push(p);
        }
        for (const [role, port] of [
          ['conductor', conductor],
          ['agent', agent],
          ['api', api],
        ] as const) {
          await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, {
            what: `${role} /readyz 200 (its output: ${out.join('')})`,
            timeoutMs: 120_000,
            intervalMs: 250,
          }).catch((err: Error) => {
            throw new Error(`${err.message}\n${out.join('')}`);
          });
        }
        const page = await fetch(`http://127.0.0.1:${ui}/ui/`);
        expect(page.status).toBe(200);
      } finally {
        for (const p of procs) p.kill('SIGTERM');
        await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode === null ? p.once('exit', r) : r(undefined)))));
        await db.drop();
        rmSync(root, { recursive: true, force: true });
      }
    },
  );
});
