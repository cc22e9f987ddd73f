import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { inventoryRefusal, reportFromItsHost } from '../actors/conductor/report-host.js';
import { OperatorEventSchema } from '../model/accelerator.js';
import { DeviceStatusSchema } from '../model/documents.js';
import type { DeviceT } from '../model/device.js';
import { firstError, InventoryMessage, MAX_DEVICES_PER_HOST, MAX_DRIVERS_PER_HOST, MAX_OBSERVED_PER_HOST, RegisterMessage } from './schemas.js';

const register = { host: 'compute-1', agentId: 'agent-1', drivers: [{ name: 'fake', version: '1.0 ✓ 😀' }] };
const device = (uuid: string): DeviceT => ({
  uuid,
  type: 'GPU',
  vendor: '10de',
  model: 'A100',
  stdBoardInfo: '{}',
  vendorBoardInfo: '{}',
  stub: false,
  controlPath: { type: 'PCI', info: '0000:01:00.0' },
  driver: 'fake',
  deployables: [{ uuid: `d-${uuid}`, name: 'gpu', numAccelerators: 1, driverName: 'fake', attributes: [], attachHandles: [] }],
});

describe('bus messages the database could not store are refused on receipt', () => {
  it('accepts a well-formed register, paired surrogates (emoji) included', () => {
    expect(firstError(RegisterMessage, register)).toBeUndefined();
  });

  it.each([
    ['a NUL in the host', { ...register, host: 'compute\u00001' }, 'NUL'],
    ['a lone surrogate in the agent id', { ...register, agentId: 'a\uD83D' }, 'surrogate'],
    ['a driver version longer than its column', { ...register, drivers: [{ name: 'fake', version: 'v'.repeat(256) }] }, '255'],
    [
      'more drivers than a host can have',
      { ...register, drivers: Array.from({ length: 5000 }, (_, i) => ({ name: `d${i}`, version: '1' })) },
      String(MAX_DRIVERS_PER_HOST),
    ],
  ])('refuses %s', (_what, msg, says) => {
    expect(firstError(RegisterMessage, msg)).toContain(says);
  });

  it('bounds an inventory: its devices, and every string in them', () => {
    const inv = { host: 'compute-1', agentId: 'a', epoch: 0, seq: 1, devices: [device('u1')] };
    expect(firstError(InventoryMessage, inv)).toBeUndefined();
    expect(firstError(InventoryMessage, { ...inv, devices: [{ ...device('u1'), vendor: 'nv\u0000' }] })).toContain('/devices/0/vendor');
    expect(firstError(InventoryMessage, { ...inv, devices: Array.from({ length: MAX_DEVICES_PER_HOST + 1 }, (_, i) => device(`u${i}`)) })).toContain(
      String(MAX_DEVICES_PER_HOST),
    );
  });

  it('bounds what an inventory says it observes: handles, cards, their layouts', () => {
    const inv = { host: 'compute-1', agentId: 'a', epoch: 0, seq: 1, devices: [device('u1')] };
    const observed = { deployables: ['d-u1'], present: ['h-1'], cards: [{ deviceUuid: 'u1', migLayout: ['1g.10gb'] }] };
    expect(firstError(InventoryMessage, { ...inv, observed })).toBeUndefined();
    expect(
      firstError(InventoryMessage, { ...inv, observed: { ...observed, present: Array.from({ length: MAX_OBSERVED_PER_HOST + 1 }, (_, i) => `h-${i}`) } }),
    ).toContain('/observed/present');
    expect(firstError(InventoryMessage, { ...inv, observed: { ...observed, cards: [{ deviceUuid: 'u1', vfCount: -1 }] } })).toContain(
      '/observed/cards/0/vfCount',
    );
    expect(firstError(InventoryMessage, { ...inv, observed: { ...observed, present: ['h\u0000'] } })).toContain('NUL');
  });

  it('a PROGRAM names its bitstream by a string id; a device status is a known value', () => {
    expect(firstError(OperatorEventSchema, { type: 'PROGRAM', bitstreamId: 'bs-1' })).toBeUndefined();
    expect(firstError(OperatorEventSchema, { type: 'PROGRAM', bitstreamId: { $ne: 1 } })).toBeDefined();
    expect(firstError(DeviceStatusSchema, 'bogus-status')).toBeDefined();
  });
});

describe('an inventory is believed only about its own host', () => {
  const known = (h: string) => h === 'compute-1' || h === 'compute-2';
  const holders = new Map([['d-u9', 'compute-2']]);
  const holderOf = (id: string) => holders.get(id);

  it("refuses a host that never registered, another host's deployable and a deployable twice", () => {
    expect(inventoryRefusal('compute-1', [device('u1')], known, holderOf)).toBeUndefined();
    expect(inventoryRefusal('ghost', [device('u1')], known, holderOf)).toContain('has not registered');
    expect(inventoryRefusal('compute-1', [device('u9')], known, holderOf)).toContain('belongs to host compute-2');
    expect(inventoryRefusal('compute-1', [device('u1'), device('u1')], known, holderOf)).toContain('twice');
  });

  it("a report on another host's subject is dropped and counted", () => {
    const stats = { misaddressedReports: 0, refusedReports: 0 };
    expect(reportFromItsHost('cyborg.agent.inventory.compute-2', { host: 'compute-1' }, stats, pino({ level: 'silent' }))).toBe(false);
    expect(stats.misaddressedReports).toBe(1);
  });
});
