/**
 * A private nats-server started with the shipped permissions (deploy/nats/nats-server.conf),
 * rewritten for a test: its subjects under the test's prefix, one agent user per given host
 * (from deploy/nats/agent-user.conf.template), JetStream in a temporary directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { token } from '../../bus/subjects.js';
import { freePort } from '../support/ports.js';

export const NATS_SERVER = '/usr/sbin/nats-server';
export const natsServerPresent = existsSync(NATS_SERVER);

const deploy = (f: string): string => readFileSync(new URL(`../../deploy/nats/${f}`, import.meta.url), 'utf8');

/** The shipped configuration, for this test's prefix and hosts. */
export function permissionsConf(prefix: string, hosts: string[]): string {
  const agents = hosts
    .map((h) =>
      deploy('agent-user.conf.template')
        .split('\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n')
        .replaceAll('HOST_ENV', envName(h))
        .replaceAll('HOST', token(h)),
    )
    .join('\n');
  return (
    deploy('nats-server.conf')
      // -sd gives the store directory; the file's own would be a duplicate.
      .replace(/^jetstream \{[^}]*\}\n/m, '')
      .replace(/# BEGIN agents[\s\S]*# END agents/, agents)
      .replaceAll('"cyborg.', `"${prefix}.cyborg.`)
      .replaceAll('$KV.cyborg_leases.', `$KV.${prefix}_cyborg_leases.`)
  );
}

export function envName(host: string): string {
  return token(host).toUpperCase().replace(/-/g, '_');
}

export class AuthNats {
  private constructor(
    readonly port: number,
    private readonly proc: ChildProcess,
    private readonly dir: string,
  ) {}

  /** `passwords`: the server's environment, as the shipped file reads them ($CYBORG_*_PASSWORD). */
  static async start(conf: string, passwords: Record<string, string>): Promise<AuthNats> {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-nats-auth-'));
    const file = join(dir, 'nats-server.conf');
    writeFileSync(file, conf);
    const port = await freePort();
    const proc = spawn(NATS_SERVER, ['-c', file, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'js')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...passwords },
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const on = (b: Buffer): void => {
        out += b.toString();
        if (out.includes('Server is ready')) resolve();
      };
      proc.stderr!.on('data', on);
      proc.stdout!.on('data', on);
      proc.once('exit', (code) => reject(new Error(`nats-server exited (${code}): ${out}`)));
    });
    return new AuthNats(port, proc, dir);
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      const gone = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGKILL');
      await gone;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
