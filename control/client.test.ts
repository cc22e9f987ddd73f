import { describe, expect, it } from 'vitest';
import { InProcessBus } from '../bus/in-process.js';
import { Subjects } from '../bus/subjects.js';
import { quietLogger } from '../test/support/log.js';
import { RemoteControlPlane } from './client.js';
import { ControlReply, ControlRequest, type ControlReplyMsg } from './messages.js';

/**
 * The api's side of a bus failure: every failure a conductor answers comes back as a catalogued
 * error with its status, and a read that met a lease changing hands is asked once more.
 */
describe("the api's control calls", () => {
  /** A conductor stand-in answering each call with the next of `replies`. */
  function conductor(replies: ControlReplyMsg[]): { api: RemoteControlPlane; asked: () => number } {
    const bus = new InProcessBus(quietLogger());
    let n = 0;
    bus.respond(Subjects.conductorApi, ControlRequest, ControlReply, () => replies[Math.min(n++, replies.length - 1)]!);
    return { api: new RemoteControlPlane(bus, quietLogger(), 2_000), asked: () => n };
  }
  const lost: ControlReplyMsg = { ok: false, error: { code: 'lease.lost', message: "this conductor's lease has lapsed; it may not write", details: {} } };

  it('asks a read once more when its conductor was losing its lease, and gets the answer', async () => {
    const { api, asked } = conductor([lost, { ok: true, result: [] }]);
    await expect(api.history('a-1')).resolves.toEqual([]);
    expect(asked()).toBe(2);
  });

  it('never repeats a write: a lost lease comes back as lease.lost, 503', async () => {
    const { api, asked } = conductor([lost, { ok: true, result: {} }]);
    await expect(api.call('documents.deleteProfile', { uuid: 'p-1' })).rejects.toMatchObject({ name: 'CyborgError', code: 'lease.lost', status: 503 });
    expect(asked()).toBe(1);
  });

  it('gives a code this build does not know a status of its own (bus.bad_reply, 502) rather than none', async () => {
    const { api } = conductor([{ ok: false, error: { code: 'quantum.entangled', message: 'from a newer conductor', details: {} } }]);
    await expect(api.call('documents.deleteProfile', { uuid: 'p-1' })).rejects.toMatchObject({
      code: 'bus.bad_reply',
      status: 502,
      details: { remoteCode: 'quantum.entangled' },
    });
  });

  it('answers a read a conductor does not answer by the deadline with bus.timeout, a 503', async () => {
    const bus = new InProcessBus(quietLogger());
    bus.respond(Subjects.conductorApi, ControlRequest, ControlReply, () => new Promise<ControlReplyMsg>(() => undefined));
    const api = new RemoteControlPlane(bus, quietLogger(), 200);
    await expect(api.history('a-1')).rejects.toMatchObject({ code: 'bus.timeout', status: 503 });
  });

  it('sends a write with its deadline, and answers one unanswered within its wait request.outcome_unknown (504), never 503', async () => {
    const bus = new InProcessBus(quietLogger());
    const budgets: (number | undefined)[] = [];
    bus.respond(Subjects.conductorApi, ControlRequest, ControlReply, (req) => {
      budgets.push(req.budgetMs);
      return new Promise<ControlReplyMsg>(() => undefined);
    });
    const api = new RemoteControlPlane(bus, quietLogger(), 200);
    await expect(api.call('documents.deleteProfile', { uuid: 'p-1' })).rejects.toMatchObject({ code: 'request.outcome_unknown', status: 504 });
    // The conductor's deadline comes before the api stops waiting: what it leaves out it answers 503 in time.
    expect(budgets).toEqual([150]);
  });
});
