/**
 * Issue 39: ids come from host and PCI slot, so a card hot-plugged into the slot of a card that
 * died came up with the dead card's fatal quarantine and reason, and nothing said to reset it.
 * Now a device's identity includes what its card says about itself (a GPU UUID, a MAC, a PCIe
 * serial): another card in the slot retires the old record (audited REPLACED) and starts as a
 * fresh discovery. A serial read otherwise once (a flaky tool) changes nothing until a second
 * report confirms it; a card an instance holds is never retired under it. Through a real
 * conductor's journal on PostgreSQL, read back from the audit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcceleratorView } from '../../model/index.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

describe.skipIf(!svc.postgres)('a replacement card inherits the dead one’s past', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let s: Stack;
  let gpus: AcceleratorView[];
  const report = (): Promise<unknown> => s.agents[0]!.discoverAndReport();
  const audit = async (id: string): Promise<{ event: string; args?: Record<string, unknown>; reason?: string }[]> => s.conductor.history(id);
  const warned = (msg: string, id: string): boolean => s.lines.some((l) => l.level === 40 && l.msg.startsWith(msg) && l.acceleratorId === id);

  beforeAll(async () => {
    db = await freshDatabase('regress_replacement_card');
    s = await startStack({ fake: { gpus: 3 }, journal: { databaseUrl: db.url }, timing: { healthEnterAfter: 1, healthLeaveAfter: 1, healthStableMs: 0 } });
    gpus = s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
    for (const g of gpus) await s.conductor.act(g.id, { type: 'ENABLE' });
  });
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it('a card swapped into a dead card’s slot starts afresh: no quarantine, no reason, audited REPLACED', async () => {
    const dead = gpus[0]!;
    const fake = s.fakes[0]!;
    fake.injectHealthFault(dead.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[0]!.checkHealth();
    await eventually(() => s.conductor.getAccelerator(dead.id).health?.status === 'quarantined', { what: 'the dead card quarantined' });
    const oldSerial = (await audit(dead.id)).find((r) => r.event === 'DISCOVERED')!.args!.serial;
    // Pulled out (the agent's discovery no longer sees it), a new card of another serial plugged in.
    fake.unplug(dead.deviceUuid);
    await report();
    expect(s.conductor.getAccelerator(dead.id).state).toBe('removed');
    fake.recover(dead.id);
    fake.swapCard(dead.deviceUuid, 'FAKE-NEW-CARD-0001');
    fake.unplug(dead.deviceUuid, false);
    await report();
    const fresh = s.conductor.getAccelerator(dead.id);
    // Same slot, same id; a new device: nobody enabled it, and it has no past.
    expect(fresh.id).toBe(dead.id);
    expect(fresh.state).toBe('inactive');
    expect(fresh.health?.status ?? 'ok').toBe('ok');
    expect(fresh.health?.reason ?? null).toBeNull();
    const replaced = (await audit(dead.id)).find((r) => r.event === 'REPLACED');
    expect(replaced).toMatchObject({ args: { serial: 'FAKE-NEW-CARD-0001', source: 'fake serial' } });
    expect(replaced!.args!.previous).toBe(oldSerial);
    expect(warned('card replaced', dead.id)).toBe(true);
    // The new card can be enabled and used like any new device.
    await s.conductor.act(dead.id, { type: 'ENABLE' });
    expect(s.conductor.getAccelerator(dead.id).state).toBe('ready');
  });

  it('a serial read otherwise once (a flaky tool) changes nothing: audited, logged, then seen as flaky', async () => {
    const card = gpus[1]!;
    const fake = s.fakes[0]!;
    const original = (await audit(card.id)).find((r) => r.event === 'DISCOVERED')!.args!.serial as string;
    expect(original).toMatch(/^FAKE-/);
    fake.swapCard(card.deviceUuid, 'FAKE-GARBLED-READ');
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('ready');
    expect(warned('card identity: the serial read is not the recorded one', card.id)).toBe(true);
    fake.swapCard(card.deviceUuid, original);
    await report();
    // Nothing acknowledged undone: the operator's enable holds.
    expect(s.conductor.getAccelerator(card.id).state).toBe('ready');
    const events = (await audit(card.id)).map((r) => r.event);
    expect(events).toContain('IDENTITY_DOUBT');
    expect(events).toContain('IDENTITY_FLAKY');
    expect(events).not.toContain('REPLACED');
  });

  it('a card swapped between two scans (no unplug seen) is replaced once a second report confirms it', async () => {
    const card = gpus[1]!;
    s.fakes[0]!.swapCard(card.deviceUuid, 'FAKE-SWAPPED-0002');
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('ready');
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('inactive');
    expect((await audit(card.id)).at(-1)).toMatchObject({ event: 'REPLACED', args: { serial: 'FAKE-SWAPPED-0002' } });
  });

  it('a card an instance holds is not retired under it: REPLACEMENT_HELD, then REPLACED once released', async () => {
    const card = gpus[2]!;
    await s.conductor.attach(card.id, { instanceUuid: 'a2f9c3e4-0000-4000-8000-000000000001' });
    s.fakes[0]!.swapCard(card.deviceUuid, 'FAKE-UNDER-AN-INSTANCE');
    await report();
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('attached');
    expect((await audit(card.id)).map((r) => r.event)).toContain('REPLACEMENT_HELD');
    await s.conductor.detach(card.id, { instanceUuid: 'a2f9c3e4-0000-4000-8000-000000000001' });
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('inactive');
    expect((await audit(card.id)).at(-1)).toMatchObject({ event: 'REPLACED', args: { serial: 'FAKE-UNDER-AN-INSTANCE' } });
  });

  it('the recorded serial survives a conductor restart: the same card is no news, another one still a doubt', async () => {
    const card = gpus[0]!;
    const rows = (await audit(card.id)).length;
    await s.restartConductor();
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('ready');
    expect((await audit(card.id)).length).toBe(rows);
    s.fakes[0]!.swapCard(card.deviceUuid, 'FAKE-AFTER-RESTART');
    await report();
    expect(s.conductor.getAccelerator(card.id).state).toBe('ready');
    expect((await audit(card.id)).at(-1)).toMatchObject({ event: 'IDENTITY_DOUBT', args: { recorded: 'FAKE-NEW-CARD-0001', read: 'FAKE-AFTER-RESTART' } });
  });

  it('a device whose hardware gives no serial says so in the audit', async () => {
    const fpga = s.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    const discovered = (await audit(fpga.id)).find((r) => r.event === 'DISCOVERED');
    expect(String(discovered!.args!.identity)).toMatch(/^none: the hardware gives no serial/);
  });
});
