import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CyborgError } from '../../errors/index.js';
import { DocumentStore } from './documents.js';
import { MemoryJournal } from '../runtime/index.js';
import type { DeviceProfileDoc } from '../../model/index.js';

const log = pino({ level: 'silent' });
const profile = (name: string, uuid: string): DeviceProfileDoc => ({
  uuid,
  name,
  description: '',
  groups: [{ 'resources:FPGA': '1' }],
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: null,
});

describe('DocumentStore', () => {
  it('writes through the journal in the shape db/ maps, and comes back after a restart', async () => {
    const journal = new MemoryJournal();
    const store = new DocumentStore(journal, log);
    store.load((await journal.load()).documents);
    await store.createProfile(profile('fpga', '11111111-1111-4111-8111-111111111111'));
    await store.createAttribute({ uuid: '22222222-2222-4222-8222-222222222222', deployableUuid: 'd', key: 'k', value: 'v', createdAt: 'now', updatedAt: null });
    await store.setDeviceStatus('dev-1', 'maintaining');
    expect(journal.documents.get('device_profiles/11111111-1111-4111-8111-111111111111')?.body).toEqual({
      uuid: '11111111-1111-4111-8111-111111111111',
      name: 'fpga',
      description: '',
      groups: [{ 'resources:FPGA': '1' }],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: null,
    });

    const again = new DocumentStore(journal, log);
    again.load((await journal.load()).documents);
    expect(again.profileByName('fpga')?.uuid).toBe('11111111-1111-4111-8111-111111111111');
    expect(again.listAttributes().map((a) => a.key)).toEqual(['k']);
    expect(again.deviceStatus('dev-1')).toBe('maintaining');
    expect(again.deviceStatus('dev-2')).toBe('enabled');

    await again.deleteProfile('11111111-1111-4111-8111-111111111111');
    expect(journal.documents.has('device_profiles/11111111-1111-4111-8111-111111111111')).toBe(false);
    expect(again.profileByName('fpga')).toBeUndefined();
  });

  it('of two racing creates with one name, exactly one wins (409 for the other)', async () => {
    const store = new DocumentStore(new MemoryJournal(), log);
    const results = await Promise.allSettled([
      store.createProfile(profile('same', '33333333-3333-4333-8333-333333333333')),
      store.createProfile(profile('same', '44444444-4444-4444-8444-444444444444')),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(CyborgError);
    expect((lost.reason as CyborgError).status).toBe(409);
    expect(store.listProfiles()).toHaveLength(1);
  });
});
