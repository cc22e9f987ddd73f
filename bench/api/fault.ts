/**
 * bench:api's fault run: Nova's ARQ lifecycle with N clients against a distributed deployment —
 * real NATS and PostgreSQL, two conductor processes sharing the hosts through leases, the api
 * (RemoteControlPlane) and the agents in this process — while the conductor holding the most
 * hosts is SIGKILLed every K seconds and a fresh one started in its place, so the other takes
 * its hosts over. Prints acknowledged cycles/s, the time from each kill until a cycle started
 * after it completes, and lost ARQs: those whose create was acknowledged (201) and delete was
 * never sent, yet are gone afterwards (must be 0).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Pool } from 'undici';
import { Agent } from '../../actors/agent/index.js';
import { migrate, openOrm } from '../../db/index.js';
import { buildApi } from '../../api/server.js';
import { connectBus } from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { RemoteControlPlane } from '../../control/index.js';
import { FakeDriver, DriverRegistry } from '../../drivers/index.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { breakdown, call, lifecycle, pct, type CycleAcks } from './lifecycle.js';
import { admin, PG, startedWhenReady, until } from './setup.js';

const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const CONDUCTOR_LOG = process.env.BENCH_CONDUCTOR_LOG ?? '/tmp/bench-api-fault-conductors.log';
/** Liveness in seconds, as the distributed tests run it: a dead conductor's lease lapses after 4 s. */
const TIMING = {
  CYBORG_HEARTBEAT_INTERVAL_MS: '500',
  CYBORG_STALE_AFTER_MS: '2500',
  CYBORG_LOST_AFTER_MS: '5000',
  CYBORG_LEASE_TTL_MS: '4000',
  CYBORG_LEASE_RENEW_MS: '500',
  CYBORG_REQUEST_TIMEOUT_MS: '5000',
};

export interface FaultRunOptions {
  seconds: number;
  killEveryS: number;
  clients: number;
  log: Logger;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function faultRun(o: FaultRunOptions): Promise<void> {
  const name = `cyborg_bench_fault_${randomUUID().slice(0, 8)}`;
  try {
    await admin(`create database "${name}"`);
  } catch (err) {
    console.log(`\nfault run: skipped — PostgreSQL unreachable at ${PG} (${String(err)})`);
    return;
  }
  const dbUrl = new URL(PG);
  dbUrl.pathname = `/${name}`;
  // The conductors refuse a database `cyborg db migrate` has not migrated.
  const orm = await openOrm({ url: dbUrl.toString(), pool: 1 });
  await migrate(orm).finally(() => orm.close());
  const prefix = `bf${randomUUID().slice(0, 6)}`;
  const logFile = createWriteStream(CONDUCTOR_LOG);
  const conductors = new Map<string, ChildProcess>();
  let n = 0;
  const startConductor = (): string => {
    const id = `fault-c${++n}`;
    const child = spawn('./cli/bin.js', ['conductor', '--conductor-id', id], {
      cwd: join(import.meta.dirname, '..', '..'),
      env: {
        ...process.env,
        ...TIMING,
        NATS_URL: NATS,
        CYBORG_SUBJECT_PREFIX: prefix,
        DATABASE_URL: dbUrl.toString(),
        LOG_LEVEL: 'warn',
        LOG_PRETTY: 'false',
        CYBORG_METRICS_PORT: '-1',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    child.stdout!.pipe(logFile, { end: false });
    conductors.set(id, child);
    return id;
  };
  const kill = async (id: string): Promise<void> => {
    const child = conductors.get(id)!;
    conductors.delete(id);
    if (child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await gone;
  };
  let bus;
  try {
    bus = await connectBus({ url: NATS, name: `bench-api-fault-${prefix}`, log: o.log, prefix });
  } catch (err) {
    console.log(`\nfault run: skipped — NATS unreachable at ${NATS} (${String(err)})`);
    await admin(`drop database if exists "${name}" with (force)`);
    return;
  }
  const Stats = Type.Record(Type.String(), Type.Unknown());
  const owned = (id: string): Promise<number> =>
    bus.request(Subjects.service('conductor', id, 'STATS'), Type.Object({}), Stats, {}, { timeoutMs: 2_000 }).then((s) => Number(s.ownedHosts ?? 0));
  const agents: Agent[] = [];
  const control = new RemoteControlPlane(bus, o.log, 5_000);
  let app: Awaited<ReturnType<typeof buildApi>> | undefined;
  try {
    // One after the other: the first applies the migrations to the fresh database.
    for (let i = 0; i < 2; i++) {
      const id = startConductor();
      await until(`conductor ${id}`, () => owned(id).then(() => true));
    }
    const hosts = Array.from({ length: o.clients }, (_, i) => `fault-${String(i + 1).padStart(2, '0')}`);
    for (const host of hosts) {
      const agent = new Agent({
        host,
        bus,
        log: o.log,
        drivers: new DriverRegistry([new FakeDriver({ host, gpus: 1, nics: 0 })]),
        heartbeatIntervalMs: 500,
        discoveryIntervalMs: 3_600_000,
        requestTimeoutMs: 5_000,
        telemetryIntervalMs: 0,
      });
      await startedWhenReady(`agent ${host} registered`, agent);
      agents.push(agent);
    }
    await startedWhenReady('the api to load every conductor', control);
    for (const host of hosts) {
      const acc = await until(`${host}'s FPGA`, () => control.getAcceleratorByRp(uuid3(NAMESPACE_DNS, `${host}_FakeDevice`)));
      await control.act(acc.id, { type: 'ENABLE' });
    }
    app = await buildApi({ control, log: o.log });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const setup = new Pool(url, { connections: 2 });
    const dp = await call(setup, 'POST', '/v2/device_profiles', [
      { name: 'bench-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] },
    ]);
    if (dp.status !== 201) throw new Error(`device profile: ${dp.status}`);
    await lifecycle(url, o.clients, hosts, 2); // warm-up
    breakdown();

    console.log(
      `\nfault run: ${o.clients} clients for ${o.seconds} s, the conductor holding the most hosts SIGKILLed every ${o.killEveryS} s and a fresh one started (PostgreSQL ${dbUrl.host}/${name}, NATS ${NATS}, lease ttl ${TIMING.CYBORG_LEASE_TTL_MS} ms; conductor logs in ${CONDUCTOR_LOG})`,
    );
    const kills: { at: number; id: string; hosts: number }[] = [];
    const cycles: { startedAt: number; endedAt: number; ok: boolean }[] = [];
    const acks: CycleAcks = { created: new Set(), deleted: new Set(), deleteSent: new Set() };
    let running = true;
    const killer = (async () => {
      for (let next = performance.now() + o.killEveryS * 1000; ; next += o.killEveryS * 1000) {
        while (running && performance.now() < next) await sleep(100);
        if (!running) return;
        const counts = await Promise.all([...conductors.keys()].map(async (id) => [id, await owned(id).catch(() => 0)] as const));
        const [victim, held] = counts.sort((a, b) => b[1] - a[1])[0]!;
        kills.push({ at: performance.now(), id: victim, hosts: held });
        await kill(victim);
        startConductor();
      }
    })();
    const run = await lifecycle(url, o.clients, hosts, o.seconds, { acks, onCycle: (startedAt, endedAt, ok) => cycles.push({ startedAt, endedAt, ok }) });
    running = false;
    await killer;
    console.log(
      `ARQ lifecycle under kills: ${run.perS.toFixed(1)} acknowledged cycles/s  p50 ${run.p50.toFixed(1)} ms  p99 ${run.p99.toFixed(1)} ms  (${run.cycles} cycles, ${run.failures} failed${run.firstError ? `, first: ${run.firstError}` : ''})`,
    );
    console.log(`  ${breakdown()}`);
    if (run.errors.length > 0)
      console.log(
        `  failures: ${run.errors
          .slice(0, 4)
          .map(([e, n]) => `${n}× ${e}`)
          .join('; ')}`,
      );
    const recoveries = kills.map((k) => {
      const first = cycles.filter((c) => c.ok && c.startedAt >= k.at).sort((a, b) => a.endedAt - b.endedAt)[0];
      const failed = cycles.filter((c) => !c.ok && c.endedAt >= k.at && (!first || c.endedAt <= first.endedAt)).length;
      return { ...k, ms: first ? first.endedAt - k.at : NaN, failed };
    });
    for (const r of recoveries)
      console.log(
        `  kill of ${r.id} (held ${r.hosts} of ${hosts.length} hosts): recovered in ${Number.isNaN(r.ms) ? 'not within the run' : `${(r.ms / 1000).toFixed(2)} s`}, ${r.failed} cycles failed meanwhile`,
      );
    const times = recoveries
      .map((r) => r.ms)
      .filter((ms) => !Number.isNaN(ms))
      .sort((a, b) => a - b);
    if (times.length > 0)
      console.log(`  time to recover: p50 ${(pct(times, 50) / 1000).toFixed(2)} s, max ${(times.at(-1)! / 1000).toFixed(2)} s over ${kills.length} kills`);

    // Lost: acknowledged, never asked to be deleted, and gone once the deployment settled. One whose
    // delete was sent but not answered (the conductor died after committing it) may rightly be gone.
    const kept = [...acks.created].filter((u) => !acks.deleted.has(u));
    let lost = 0;
    let goneUnanswered = 0;
    for (const uuid of kept) {
      const found = await until(
        `ARQ ${uuid} answered`,
        async () => {
          const r = await call(setup, 'GET', `/v2/accelerator_requests/${uuid}`);
          return r.status === 200 ? 'present' : r.status === 404 ? 'gone' : undefined;
        },
        60_000,
      ).catch(() => 'no answer');
      if (found === 'present') continue;
      if (found === 'gone' && acks.deleteSent.has(uuid)) goneUnanswered++;
      else lost++;
    }
    await setup.close();
    console.log(
      `  acknowledged ARQs: ${acks.created.size} created, ${acks.deleted.size} deleted, ${kept.length} left by failed cycles (${goneUnanswered} of them gone by a delete sent but not answered); lost ${lost} (target 0)`,
    );
  } finally {
    await app?.close();
    control.stop();
    await Promise.all(agents.map((a) => a.stop().catch(() => undefined)));
    for (const id of [...conductors.keys()]) await kill(id);
    await new Kvm(bus.nc)
      .open(`${prefix}_cyborg_leases`)
      .then((kv) => kv.destroy())
      .catch(() => undefined);
    await bus.close();
    logFile.end();
    await admin(`drop database if exists "${name}" with (force)`).catch(() => undefined);
  }
}
