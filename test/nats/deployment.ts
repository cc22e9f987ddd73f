/**
 * A distributed deployment for a test: role processes started as an operator would start them,
 * sharing one NATS (and PostgreSQL when given) under a subject prefix of the test's own, plus an
 * api-side client (the RemoteControlPlane, in the test process) to look at it as the API would.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteControlPlane } from '../../control/client.js';
import { connectBus, type NatsBus } from '../../bus/nats.js';
import { Kvm } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import { onTestFailed } from 'vitest';
import { Subjects } from '../../bus/subjects.js';
import { captureLogger, type LogLine } from '../support/log.js';
import { RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';

/** Short timings so that liveness plays out in seconds. */
export const FAST: Record<string, string> = {
  CYBORG_HEARTBEAT_INTERVAL_MS: '500',
  CYBORG_STALE_AFTER_MS: '2500',
  CYBORG_LOST_AFTER_MS: '5000',
  CYBORG_DISCOVERY_INTERVAL_MS: '60000',
  CYBORG_LEASE_TTL_MS: '4000',
  CYBORG_LEASE_RENEW_MS: '500',
  CYBORG_REQUEST_TIMEOUT_MS: '5000',
  CYBORG_METRICS_PORT: '0',
  // The api role's visualizer listener on any free port: 6680 may be another story's.
  CYBORG_UI_PORT: '0',
  // The agent role enables no driver unless told; these stories run the fake one.
  CYBORG_ENABLED_DRIVERS: 'fake_driver',
  CYBORG_FAKE_GPUS: '1',
  CYBORG_FAKE_NICS: '0',
};

export class Deployment {
  readonly prefix = `t${randomUUID().slice(0, 8)}`;
  readonly dir = mkdtempSync(join(tmpdir(), 'cyborg-dist-'));
  readonly procs: RoleProcess[] = [];
  readonly clientLog = captureLogger();
  bus: NatsBus | undefined;
  client: RemoteControlPlane | undefined;

  constructor(
    readonly natsUrl: string,
    readonly databaseUrl?: string,
  ) {}

  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...FAST,
      NATS_URL: this.natsUrl,
      CYBORG_SUBJECT_PREFIX: this.prefix,
      ...(this.databaseUrl ? { DATABASE_URL: this.databaseUrl } : {}),
      ...extra,
    };
  }

  async conductor(name = 'conductor', extra: Record<string, string> = {}): Promise<RoleProcess> {
    // Without a database of its own a conductor refuses to start: the in-memory journal is named.
    const p = RoleProcess.spawn(
      name,
      ['conductor', '--conductor-id', name],
      this.env({ ...(this.databaseUrl ? {} : { DATABASE_URL: 'memory://' }), ...extra }),
    );
    this.procs.push(p);
    await p.waitLog((l) => l.msg === 'conductor role up', 'conductor up', 120_000);
    return p;
  }

  /** An agent; `registered: false` returns at once (no conductor may be up to register it yet). */
  async agent(host: string, extra: Record<string, string> = {}, o: { registered?: boolean } = {}): Promise<RoleProcess> {
    const p = RoleProcess.spawn(`agent ${host}`, ['agent', '--host', host, '--data-dir', join(this.dir, host)], this.env(extra));
    this.procs.push(p);
    if (o.registered !== false) await p.waitLog((l) => l.msg === 'agent registered and reported its inventory', `agent ${host} registered`, 120_000);
    return p;
  }

  /** The api role as an operator starts it, on a port of its own. */
  async apiRole(name = 'api'): Promise<{ proc: RoleProcess; url: string }> {
    const port = await freePort();
    const proc = RoleProcess.spawn(name, ['api', '--port', String(port), '--listen', '127.0.0.1'], this.env());
    this.procs.push(proc);
    await proc.waitLog((l) => l.msg === 'api role up', `${name} listening`, 120_000);
    return { proc, url: `http://127.0.0.1:${port}` };
  }

  /**
   * The api role as the docs start it, with its own default listeners (none of this harness's
   * ports): a second deployment on a machine where another runs. Its API port is the default
   * (6666) where that is free here, else one of its own.
   */
  async apiRoleWithItsDefaults(name = 'api', apiPortFree = true): Promise<RoleProcess> {
    const env = this.env();
    delete env.CYBORG_UI_PORT;
    delete env.CYBORG_METRICS_PORT;
    const proc = RoleProcess.spawn(name, ['api', ...(apiPortFree ? [] : ['--port', String(await freePort())])], env);
    this.procs.push(proc);
    await proc.waitLog((l) => l.msg === 'api role up', `${name} listening`, 120_000);
    return proc;
  }

  /** The API's view of the deployment: a read model loaded from the conductors, kept by their events. */
  async api(o: { timeoutMs?: number } = {}): Promise<RemoteControlPlane> {
    this.bus ??= await connectBus({ url: this.natsUrl, name: 'test-client', log: this.clientLog.log, prefix: this.prefix });
    // The api's wait for a conductor (an api role's CYBORG_REQUEST_TIMEOUT_MS).
    const client = new RemoteControlPlane(this.bus, this.clientLog.log, o.timeoutMs ?? 10_000);
    await eventually(
      async () => {
        try {
          await client.start();
          return true;
        } catch {
          client.stop();
          return false;
        }
      },
      { what: 'a conductor to answer', timeoutMs: 60_000 },
    );
    this.client = client;
    return client;
  }

  /** Asks a role process for its STATS over NATS. */
  async stats(role: string, id: string): Promise<Record<string, unknown>> {
    this.bus ??= await connectBus({ url: this.natsUrl, name: 'test-client', log: this.clientLog.log, prefix: this.prefix });
    return this.bus.request(Subjects.service(role, id, 'STATS'), Type.Object({}), Type.Record(Type.String(), Type.Unknown()), {}, { timeoutMs: 5_000 });
  }

  /**
   * Call inside a test: if it fails, the log of every role process and of the test's own client
   * is printed (what a CI run keeps), so that a failure seen once can be read, not guessed at.
   */
  logsOnFailure(): void {
    onTestFailed(() => {
      const out = [...this.procs.map((p) => [p.name, p.lines] as const), ['test client', this.clientLog.lines] as const].map(
        ([name, lines]) => `--- ${name} (last ${TAIL} lines, transitions and debug left out)\n${tail(lines)}`,
      );
      process.stderr.write(`${out.join('\n')}\n`);
    });
  }

  async stop(): Promise<void> {
    this.client?.stop();
    const crashed = this.procs.filter((p) => p.diedOfUnhandledError).map((p) => `${p.name}: ${p.stderr.slice(-800)}`);
    await Promise.all(this.procs.map((p) => p.kill('SIGKILL')));
    // The conductors' lease bucket would otherwise outlive the test in the shared JetStream.
    if (this.bus)
      await new Kvm(this.bus.nc)
        .open(`${this.prefix}_cyborg_leases`)
        .then((kv) => kv.destroy())
        .catch(() => undefined);
    await this.bus?.close();
    rmSync(this.dir, { recursive: true, force: true });
    if (crashed.length > 0) throw new Error(`a role process died of an unhandled error or promise rejection:\n${crashed.join('\n')}`);
  }
}

const TAIL = 120;
const LEFT_OUT = new Set(['transition', 'flush', 'NATS status']);

/** A process's log as lines to read: time, level, message and its fields. */
function tail(lines: LogLine[]): string {
  return lines
    .filter((l) => l.level >= 30 && !LEFT_OUT.has(l.msg))
    .slice(-TAIL)
    .map((l) => {
      const { level, msg, time, pid: _pid, hostname: _h, ...rest } = l;
      const at = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
      return `${at} ${level >= 50 ? 'ERROR' : level >= 40 ? 'WARN ' : 'INFO '} ${msg} ${JSON.stringify(rest)}`;
    })
    .join('\n');
}
