import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Conductor } from '../actors/conductor/index.js';
import { MemoryJournal } from '../actors/runtime/index.js';
import { InProcessBus } from '../bus/in-process.js';
import { Subjects } from '../bus/subjects.js';
import { BusError } from '../errors/index.js';
import { captureLogger, quietLogger } from '../test/support/log.js';
import { callConductor, RemoteControlPlane } from './client.js';
import { ControlReply, ControlRequest, type ControlReplyMsg } from './messages.js';
import { serveControlPlane, ViewPublisher } from './responder.js';

const timing = { driverOpTimeoutMs: 5_000, staleAfterMs: 60_000, lostAfterMs: 120_000, heartbeatIntervalMs: 60_000 };

/** The conductor's side of the api ↔ conductor protocol refuses what does not match a call's schema, and goes on serving. */
describe('control responder', () => {
  let bus: InProcessBus;
  let conductor: Conductor;
  let publisher: ViewPublisher;
  let stop: () => void;

  beforeEach(async () => {
    bus = new InProcessBus(quietLogger());
    conductor = new Conductor({ bus, journal: new MemoryJournal(), log: quietLogger(), timing });
    await conductor.start();
    publisher = new ViewPublisher(bus, conductor, 'c1');
    stop = serveControlPlane({ bus, conductor, conductorId: 'c1', publisher, timeoutMs: 5_000, log: captureLogger().log });
  });
  afterEach(async () => {
    stop();
    publisher.stop();
    await conductor.stop();
  });

  const send = (op: string, args: unknown): Promise<ControlReplyMsg> =>
    bus.request(Subjects.conductorApi, ControlRequest, ControlReply, { op, args }, { timeoutMs: 5_000 });

  it('refuses a wrong argument type, a missing field and an unknown call with request.invalid', async () => {
    const wrongType = await send('act', { id: 42, event: { type: 'ENABLE' }, meta: {} });
    expect(wrongType).toMatchObject({ ok: false, error: { code: 'request.invalid' } });
    expect(wrongType.ok === false && wrongType.error.message).toMatch(/^control call act: arguments \/id: /);

    const missing = await send('bindArq', { uuid: 'a1', meta: {} });
    expect(missing).toMatchObject({ ok: false, error: { code: 'request.invalid' } });
    expect(missing.ok === false && missing.error.message).toMatch(/binding/);

    const unknown = await send('reboot', {});
    expect(unknown).toMatchObject({ ok: false, error: { code: 'request.invalid', message: 'unknown control call "reboot"' } });

    // The machine's own events never come from outside the conductor.
    const internal = await send('act', { id: 'x', event: { type: 'OP_DONE', seq: 1 }, meta: {} });
    expect(internal).toMatchObject({ ok: false, error: { code: 'request.invalid' } });

    // A conductor-to-conductor call from an api process: the row's callers do not name it.
    const wrongRole = await send('arqAttach', { arqUuid: 'a1', binding: { hostname: 'h', deviceRpUuid: 'rp', instanceUuid: 'i' } });
    expect(wrongRole).toMatchObject({ ok: false, error: { code: 'request.invalid', message: 'control call arqAttach is not for the api role to send' } });

    // Positional arguments, as older clients sent them, are refused as well.
    const positional = await send('history', ['x', 10]);
    expect(positional).toMatchObject({ ok: false, error: { code: 'request.invalid' } });
  });

  it('keeps serving after refusing: a well-formed call from a client goes through', async () => {
    await send('createArq', { req: { deviceProfileName: 7 }, meta: {} });
    const remote = new RemoteControlPlane(bus, quietLogger(), 5_000);
    await remote.start();
    try {
      const doc = { uuid: 'p1', name: 'gpu', description: null, groups: [{ 'resources:PGPU': '1' }], createdAt: new Date().toISOString(), updatedAt: null };
      await expect(remote.documents.createProfile(doc)).resolves.toEqual(doc);
      expect(conductor.documents.getProfile('p1')?.name).toBe('gpu');
      await expect(remote.history('nothing-here')).resolves.toEqual([]);
    } finally {
      remote.stop();
    }
  });

  it('the client refuses a reply that does not match its call', async () => {
    bus.respond('test.liar', ControlRequest, ControlReply, async () => ({ ok: true as const, result: { conductorId: 'c9' } }));
    const err = await callConductor(bus, 'test.liar', 'snapshot', {}, { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusError);
    expect((err as BusError).code).toBe('bus.invalid_message');
    expect((err as BusError).message).toMatch(/^reply to control call snapshot does not match its schema/);
  });
});
