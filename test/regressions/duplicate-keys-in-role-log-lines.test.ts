/**
 * Reviewer's defect 20, the separate roles: the agent role bound `host` on its logger and the
 * agent passed it again in its calls (`{…,"host":"node","host":"node",…}`); the conductor role
 * bound `conductorId` and its lease table, host router and ARQ home passed it again. The agent,
 * its cache and those three now bind the id themselves, once, and their roles hand them a logger
 * without it: the id is on each of their lines once, whoever builds them (the all-in-one, a test).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostKey } from '../../actors/cluster/index.js';
import { createLogger, loadConfig, type Config } from '../../config/index.js';
import { startAgentRole, type RunningAgent } from '../../roles/agent.js';
import { startConductor, type RunningConductor } from '../../roles/conductor.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { duplicateKeys } from '../support/log.js';

describe.skipIf(!svc.nats)("the agent and conductor roles' logs, as a strict ingester reads them", { timeout: 60_000 }, () => {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'cyborg-dup-'));
  const raw: string[] = [];
  let nc: NatsConnection;
  let conductor: RunningConductor | undefined;
  let agent: RunningAgent | undefined;
  const parsed = (): Record<string, unknown>[] => raw.map((l) => JSON.parse(l) as Record<string, unknown>);
  const line = (msg: string): Record<string, unknown> | undefined => parsed().find((l) => l.msg === msg);

  // Each role's root logger as the program makes it, writing its raw lines here instead of stdout.
  const rootLogger = (config: Config) =>
    createLogger(config, undefined, {
      destination: new Writable({
        write(chunk: Buffer, _enc, cb) {
          raw.push(...chunk.toString().split('\n').filter(Boolean));
          cb();
        },
      }),
    });
  const configOf = (role: 'agent' | 'conductor'): Config =>
    loadConfig(
      {
        host: 'dup-node',
        dataDir,
        ...(role === 'conductor' ? { databaseUrl: 'memory://' } : {}),
        natsUrl: svc.nats!,
        logLevel: 'debug',
        logPretty: false,
        distributed: { subjectPrefix: prefix, conductorId: 'dup-conductor', leaseTtlMs: 1_000, leaseRenewMs: 200, requestTimeoutMs: 5_000, metricsPort: -1 },
        agent: { enabledDrivers: ['fake_driver'], hotplug: 'off', libvirtStateDir: '', metricsPort: -1 },
        conductor: { metricsPort: -1 },
        fake: { gpus: 1, nics: 0 },
      },
      {},
      { role },
    );

  beforeAll(async () => {
    // A host whose conductor died before this one started: the new conductor takes it over, so the
    // lease table's and the host router's takeover lines are written too.
    nc = await connect({ servers: svc.nats! });
    const kv = await new Kvm(nc).create(`${prefix}_cyborg_leases`, { history: 1 });
    await kv.put(hostKey('dup-orphan'), new TextEncoder().encode(JSON.stringify({ host: 'dup-orphan', owner: 'dup-dead-conductor' })));
    conductor = await startConductor(configOf('conductor'), rootLogger(configOf('conductor')));
    agent = await startAgentRole(configOf('agent'), rootLogger(configOf('agent')));
    await agent.ready;
  });
  afterAll(async () => {
    await agent?.stop();
    await conductor?.stop();
    await new Kvm(nc)
      .open(`${prefix}_cyborg_leases`)
      .then((kv) => kv.destroy())
      .catch(() => undefined);
    await nc?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("every line has each key once; the agent's carry its host, the lease table's, router's and ARQ home's their conductor", async () => {
    await eventually(() => line('took over the hosts of an expired conductor lease'), { what: "the router's takeover line", timeoutMs: 20_000 });
    await eventually(() => line('this conductor is the ARQ home now'), { what: "the ARQ home's line" });

    const agentSide = { role: 'agent', host: 'dup-node' };
    expect(line('agent cache opened')).toMatchObject({ ...agentSide, epoch: 0 });
    expect(line('agent started')).toMatchObject({ ...agentSide, agentId: agent!.agent.agentId });
    expect(line('agent registered and reported its inventory')).toMatchObject(agentSide);

    const conductorSide = { role: 'conductor', conductorId: 'dup-conductor' };
    expect(line('took over a host whose conductor lease expired')).toMatchObject({ ...conductorSide, host: 'dup-orphan', from: 'dup-dead-conductor' });
    expect(line('took over the hosts of an expired conductor lease')).toMatchObject(conductorSide);
    expect(line('this conductor is the ARQ home now')).toMatchObject(conductorSide);
    expect(line('conductor role up')).toMatchObject(conductorSide);

    expect(raw.map((l) => ({ line: l, duplicated: duplicateKeys(l) })).filter((l) => l.duplicated.length > 0)).toEqual([]);
  });
});
