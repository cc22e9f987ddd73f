import { describe as suite, expect, it } from 'vitest';
import { matchGroups, readGroups, type Candidate } from './index.js';

const gpu = (id: string, traits: string[], free = 1, rc = 'PGPU'): Candidate => ({ id, free: new Map([[rc, free]]), traits: ['OWNER_CYBORG', ...traits] });
const H100 = gpu('h100', ['CUSTOM_NVIDIA_2331']);
const A10 = gpu('a10', ['CUSTOM_NVIDIA_2236']);
const MIG = gpu('mig', ['CUSTOM_NVIDIA_2331_MIG_3G_40GB'], 2, 'CUSTOM_MIG_3G_40GB');

suite('a device profile matched the way Placement matches it', () => {
  it('takes a provider with the class, every required trait and no forbidden one', () => {
    const groups = readGroups([{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'required' }]);
    expect(matchGroups(groups, [A10, H100])).toEqual({ assignment: ['h100'] });
  });

  it('never takes a provider that has a forbidden trait, and says so', () => {
    const groups = readGroups([{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2331': 'forbidden' }]);
    expect(matchGroups(groups, [H100])).toEqual({ reasons: ['group 0 (PGPU=1, !CUSTOM_NVIDIA_2331): h100 has forbidden trait CUSTOM_NVIDIA_2331'] });
    expect(matchGroups(groups, [H100, A10])).toEqual({ assignment: ['a10'] });
  });

  it('reads every resources: key of a group: one provider must have them all', () => {
    const groups = readGroups([{ 'resources:PGPU': '1', 'resources:CUSTOM_MIG_3G_40GB': '1' }]);
    expect(matchGroups(groups, [H100, MIG])).toMatchObject({
      reasons: [expect.stringContaining('h100 has no CUSTOM_MIG_3G_40GB inventory; mig has no PGPU inventory')],
    });
  });

  it('matches every group, not only the first; isolate puts them on different providers', () => {
    const groups = readGroups([{ 'resources:CUSTOM_MIG_3G_40GB': '1' }, { 'resources:CUSTOM_MIG_3G_40GB': '1' }]);
    expect(matchGroups(groups, [MIG], 'none')).toEqual({ assignment: ['mig', 'mig'] });
    expect(matchGroups(groups, [MIG], 'isolate')).toMatchObject({ reasons: [expect.stringContaining('group_policy=isolate')] });
    const three = readGroups([{ 'resources:CUSTOM_MIG_3G_40GB': '1' }, { 'resources:CUSTOM_MIG_3G_40GB': '1' }, { 'resources:CUSTOM_MIG_3G_40GB': '1' }]);
    // `none` shares a provider only while its free amount lasts.
    expect(matchGroups(three, [MIG], 'none')).toMatchObject({ reasons: [expect.stringContaining('not together')] });
    const mixed = readGroups([{ 'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_2236': 'forbidden' }, { 'resources:PGPU': '1' }]);
    expect(matchGroups(mixed, [H100, A10], 'isolate')).toEqual({ assignment: ['h100', 'a10'] });
  });

  it('counts amounts: a group asking for more than a provider has free does not land there', () => {
    expect(matchGroups(readGroups([{ 'resources:CUSTOM_MIG_3G_40GB': '3' }]), [MIG])).toEqual({
      reasons: ['group 0 (CUSTOM_MIG_3G_40GB=3): mig has 2 CUSTOM_MIG_3G_40GB free, 3 asked'],
    });
  });

  it('refuses bad groups naming the field, never matching them wrongly', () => {
    const refused = (g: Record<string, string>[]): unknown => {
      try {
        readGroups(g);
      } catch (err) {
        return { code: (err as { code: string }).code, field: (err as { details: { field: string } }).details.field };
      }
      return 'accepted';
    };
    expect(refused([{ 'resources:PGPU': 'one' }])).toEqual({ code: 'request.invalid', field: 'groups[0].resources:PGPU' });
    expect(refused([{ 'resources:PGPU': '0' }])).toEqual({ code: 'request.invalid', field: 'groups[0].resources:PGPU' });
    expect(refused([{ 'resources:PGPU': '1', 'trait:CUSTOM_X': 'preferred' }])).toEqual({ code: 'request.invalid', field: 'groups[0].trait:CUSTOM_X' });
    expect(refused([{ 'resources:PGPU': '1', 'trait:CUSTOM_X': 'required', 'trait:custom_x': 'forbidden' }])).toEqual({
      code: 'request.invalid',
      field: 'groups[0].trait:CUSTOM_X',
    });
    expect(refused([{ 'trait:CUSTOM_X': 'required' }])).toEqual({ code: 'request.invalid', field: 'groups[0]' });
    expect(refused([])).toEqual({ code: 'request.invalid', field: 'groups' });
    expect(refused([{ 'resource:PGPU': '1' }])).toEqual({ code: 'request.invalid', field: 'groups[0].resource:PGPU' });
  });

  it('reads one spelling of each name, whatever case an older client sent', () => {
    const [g] = readGroups([{ 'resources: pgpu ': '1', 'trait:custom_nvidia_2331': 'required', 'accel:bitstream_id': 'abc' }]);
    expect([...g!.resources]).toEqual([['PGPU', 1]]);
    expect([...g!.required]).toEqual(['CUSTOM_NVIDIA_2331']);
    expect(g!.accel).toEqual({ bitstream_id: 'abc' });
  });
});
