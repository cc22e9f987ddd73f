import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '../../bus/subjects.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { LogLine } from '../support/log.js';
import type { RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

const DROPPED = new Set(['dropped a message that is not JSON', 'dropped a message that does not match its schema']);

/**
 * A misbehaving peer sends garbage on every subject the roles listen on: text that is not JSON,
 * and JSON of the wrong shape. Every process stays up, drops each message with one log line naming
 * the subject, and keeps serving.
 */
describe.skipIf(!svc.nats)('malformed messages on every subject', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let conductor: RoleProcess;
  let agent: RoleProcess;

  beforeAll(async () => {
    dep = new Deployment(svc.nats!);
    conductor = await dep.conductor('conductor-m');
    agent = await dep.agent('node-m');
    await dep.api();
  }, 180_000);
  afterAll(async () => {
    await dep?.stop();
  });

  it('drops them with a log line and keeps serving', async () => {
    dep.logsOnFailure();
    const listeners: [string, RoleProcess | 'api'][] = [
      [Subjects.report('register', 'node-m'), conductor],
      [Subjects.report('inventory', 'node-m'), conductor],
      [Subjects.report('heartbeat', 'node-m'), conductor],
      [Subjects.conductorApi, conductor],
      [Subjects.conductorApiOf('conductor-m'), conductor],
      [Subjects.conductorForward('conductor-m', 'register'), conductor],
      [Subjects.conductorForward('conductor-m', 'inventory'), conductor],
      [Subjects.conductorForward('conductor-m', 'heartbeat'), conductor],
      [Subjects.service('conductor', 'conductor-m', 'STATS'), conductor],
      [Subjects.command('node-m'), agent],
      [Subjects.service('agent', 'node-m', 'PING'), agent],
      [Subjects.views, 'api'],
    ];
    const nc = dep.bus!.nc;
    for (const [subject] of listeners) {
      nc.publish(`${dep.prefix}.${subject}`, 'this is not json {');
      nc.publish(`${dep.prefix}.${subject}`, JSON.stringify({ host: 42, unexpected: true }));
    }
    await nc.flush();

    const linesOf = (who: RoleProcess | 'api'): LogLine[] => (who === 'api' ? dep.clientLog.lines : who.lines);
    for (const [subject, who] of listeners) {
      await eventually(() => linesOf(who).filter((l) => DROPPED.has(l.msg) && l.subject === subject).length >= 2, { what: `two drop lines for ${subject}` });
    }
    expect(conductor.alive && agent.alive).toBe(true);

    // Still serving: the conductor answers, the agent heartbeats, the api reads and writes.
    const stats = await dep.stats('conductor', 'conductor-m');
    expect(stats.accelerators).toBe(2);
    const api = dep.client!;
    const gpu = api.listAccelerators({ host: 'node-m' }).find((a) => a.deviceType === 'GPU')!;
    expect((await api.act(gpu.id, { type: 'ENABLE' })).state).toBe('ready');
    const beats = stats.heartbeats as number;
    await eventually(async () => ((await dep.stats('conductor', 'conductor-m')).heartbeats as number) > beats, { what: 'heartbeats still processed' });
  });
});
