import { describe, expect, it } from 'vitest';
import type { Inventories } from './client.js';
import { desiredOf, functionTrait, type DesiredProvider } from './desired.js';
import { holdConsumer, planHolds } from './holds.js';
import { needsUsages, planHold, planInventories, planTraits } from './plan.js';
import type { AcceleratorView } from '../../model/index.js';
import { acceleratorMachine, type AcceleratorState } from '../../machines/index.js';

const inv = (rc: string, total: number, reserved: number): Inventories => ({
  [rc]: { total, reserved, min_unit: 1, max_unit: total, step_size: 1, allocation_ratio: 1 },
});

const fpga = (over: Partial<DesiredProvider> = {}): DesiredProvider => ({
  id: 'a',
  host: 'h',
  rpUuid: 'r',
  name: 'h_FakeDevice',
  present: true,
  resourceClass: 'FPGA',
  total: 16,
  usable: true,
  missing: false,
  traits: ['CUSTOM_FAKE_DEVICE', 'OWNER_CYBORG'],
  holders: [],
  ...over,
});

describe('desired provider of an accelerator', () => {
  /** A view in `state`, with that state's tags as the machine declares them. */
  const inState = (state: AcceleratorState) => ({ state, tags: [...acceleratorMachine.states[state]!.tags] });
  const view = {
    id: 'a',
    name: 'h_FakeDevice',
    host: 'h',
    driver: 'fake',
    resourceClass: 'FPGA',
    traits: ['CUSTOM_FAKE_DEVICE'],
    rpUuid: 'r',
    capacity: 16,
    allocations: [],
    ...inState('programmed'),
    program: { functionId: 'gzip-v1' },
    missing: false,
  } as unknown as AcceleratorView;

  it('adds OWNER_CYBORG and the function trait of a programmed FPGA', () => {
    const d = desiredOf(view);
    expect(d.ok && d.desired.traits).toEqual(['CUSTOM_FAKE_DEVICE', 'CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP_V1', 'OWNER_CYBORG']);
    expect(d.ok && d.desired.usable).toBe(true);
  });

  it('is not usable while inactive, in error, offline or missing', () => {
    for (const state of ['inactive', 'installing', 'uninstalling', 'error', 'offline'] as const) {
      const d = desiredOf({ ...view, ...inState(state) });
      expect(d.ok && d.desired.usable).toBe(false);
    }
    const d = desiredOf({ ...view, missing: true, ...inState('attached') });
    expect(d.ok && d.desired.usable).toBe(false);
  });

  it('refuses a deployable without a resource class, as Cyborg does', () => {
    expect(desiredOf({ ...view, resourceClass: null })).toMatchObject({ ok: false });
  });

  it('makes a valid trait from any function id', () => {
    expect(functionTrait('intel', '9e6b-4f.x')).toBe('CUSTOM_FPGA_FUNCTION_ID_INTEL_9E6B_4F_X');
  });
});

describe('inventory plan', () => {
  it("writes Cyborg's inventory on a new provider, reserved while not usable", () => {
    expect(planInventories(fpga({ usable: false }), {}).write).toEqual(inv('FPGA', 16, 16));
    expect(planInventories(fpga(), {}).write).toEqual(inv('FPGA', 16, 0));
  });

  it('writes nothing when Placement already holds it', () => {
    expect(planInventories(fpga(), inv('FPGA', 16, 0)).write).toBeNull();
  });

  it('asks for usages only when room would shrink', () => {
    expect(needsUsages(fpga(), inv('FPGA', 16, 16))).toBe(false);
    expect(needsUsages(fpga({ usable: false }), inv('FPGA', 16, 0))).toBe(true);
    expect(needsUsages(fpga({ total: 8 }), inv('FPGA', 16, 0))).toBe(true);
    expect(needsUsages(fpga(), inv('PGPU', 1, 0))).toBe(true);
  });

  it('reserves only what is not allocated when disabled under an allocation', () => {
    expect(planInventories(fpga({ usable: false }), inv('FPGA', 16, 0), { FPGA: 3 }).write).toEqual(inv('FPGA', 16, 13));
  });

  it('never shrinks a total below what is allocated, and flags it', () => {
    const p = planInventories(fpga({ total: 4 }), inv('FPGA', 16, 0), { FPGA: 6 });
    expect(p.write).toEqual(inv('FPGA', 6, 0));
    expect(p.flags.map((f) => f.code)).toEqual(['held_for_allocations']);
  });

  it('keeps an old resource class that is still allocated, reserved, and flags it', () => {
    const p = planInventories(fpga(), inv('CUSTOM_OLD', 4, 0), { CUSTOM_OLD: 1 });
    expect(p.write).toEqual({ ...inv('FPGA', 16, 0), ...{ CUSTOM_OLD: { ...inv('CUSTOM_OLD', 4, 3).CUSTOM_OLD! } } });
    expect(p.flags.map((f) => f.code)).toEqual(['stale_class_allocated']);
  });

  it("holds a removed provider's inventory for its allocations", () => {
    const p = planHold(inv('PGPU', 1, 0), { PGPU: 1 });
    expect(p.write).toBeNull();
    expect(p.flags[0]!.code).toBe('removed_but_allocated');
    expect(planHold(inv('FPGA', 16, 0), { FPGA: 2 }).write).toEqual(inv('FPGA', 16, 14));
  });
});

describe('trait plan', () => {
  it('puts exactly the desired traits, naming the stale ones', () => {
    const p = planTraits(['CUSTOM_FPGA_FUNCTION_ID_FAKE_AES', 'OWNER_CYBORG'], ['CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP', 'OWNER_CYBORG']);
    expect(p.write).toEqual(['CUSTOM_FPGA_FUNCTION_ID_FAKE_AES', 'OWNER_CYBORG']);
    expect(p.removed).toEqual(['CUSTOM_FPGA_FUNCTION_ID_FAKE_GZIP']);
    expect(planTraits(['A', 'B'], ['B', 'A']).write).toBeNull();
  });
});

describe("holds: every holder counted once in Placement's usage", () => {
  const vm = '6f1c3e7a-5b2d-4a8e-9c1f-2d3e4f5a6b7c';
  it('holds a device Nova did not allocate, and writes nothing for one it did', () => {
    const d = fpga({ total: 2, holders: [{ instanceUuid: vm, projectId: 'p1' }] });
    const bare = planHolds(d, {});
    expect(bare.add).toEqual([{ consumer: holdConsumer('r', 0), projectId: 'p1' }]);
    expect(bare.usedAfter).toBe(1);
    const nova = planHolds(d, { [vm]: { FPGA: 1 } });
    expect(nova.add).toEqual([]);
    expect(nova.remove).toEqual([]);
    expect(nova.usedAfter).toBe(1);
  });
  it('frees exactly the holds no holder needs any more', () => {
    const d = fpga({ total: 2, holders: [] });
    const p = planHolds(d, { [holdConsumer('r', 0)]: { FPGA: 1 }, [holdConsumer('r', 1)]: { FPGA: 1 }, other: { FPGA: 1 } });
    expect(p.remove.sort()).toEqual([holdConsumer('r', 0), holdConsumer('r', 1)].sort());
    expect(p.usedAfter).toBe(1);
  });
});
