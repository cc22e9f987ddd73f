import { describe, expect, it } from 'vitest';
import { FakeDriver } from '../drivers/fake/index.js';
import { changedDevices, fingerprint } from './inventory-memo.js';

describe('changedDevices', () => {
  it('says nothing changed, everything is unknown, or exactly which devices to diff', async () => {
    const devices = await new FakeDriver({ host: 'h', gpus: 2, nics: 1, vfsPerNic: 2 }).discover();
    const before = fingerprint(devices);
    expect(changedDevices(undefined, before)).toBe('all');
    expect(changedDevices(before, fingerprint(structuredClone(devices)))).toBeNull();

    const [fpga, gpu1, gpu2, nic] = devices;
    const edited = { ...gpu1!, model: 'other' };
    const next = fingerprint([fpga!, edited, nic!, gpu2!]);
    // gpu1 changed, gpu2 and the NIC moved; nothing vanished.
    expect(changedDevices(before, next)).toEqual(new Set([gpu1!.controlPath.info, gpu2!.controlPath.info, nic!.controlPath.info]));
    expect(changedDevices(before, fingerprint([fpga!, gpu1!, gpu2!]))).toEqual(new Set([nic!.controlPath.info]));
  });
});
