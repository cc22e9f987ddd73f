import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { desiredOf } from '../../openstack/placement/desired.js';
import type { AcceleratorView } from '../../model/index.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator servicing hardware: a device marked for maintenance, a host drained with instances
 * on it. Marks stop new binds and reserve Placement at once, never touch a running instance, and
 * can be cancelled at any point with nothing lost.
 */
const base = '/cyborg/v1';
const vm1 = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
const vm2 = '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f';
const vm3 = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';

let s: Stack;

beforeEach(async () => {
  s = await startStack({ api: true, fake: { gpus: 2, nics: 0 } });
});
afterEach(async () => {
  await s.stop();
});

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  s.app.inject({ method, url: `${base}${url}`, ...(method === 'POST' ? { payload: payload ?? {} } : {}) });
const view = (id: string): AcceleratorView => s.conductor.getAccelerator(id);
/** What Placement is told about it: usable (allocatable) or reserved. */
const usable = (id: string): boolean => {
  const d = desiredOf(view(id));
  return d.ok && d.desired.usable;
};

async function enabledGpus(): Promise<AcceleratorView[]> {
  const gpus = s.conductor.listAccelerators({ type: 'GPU' });
  for (const g of gpus) expect((await req('POST', `/accelerators/${g.id}/enable`)).statusCode).toBe(200);
  return gpus.map((g) => view(g.id));
}

describe('maintenance of one device', () => {
  it('stops new binds and reserves it at once, shows who remains, and reads maintenance once they leave', async () => {
    const [gpu] = await enabledGpus();
    expect((await req('POST', `/accelerators/${gpu!.id}/attach`, { instanceUuid: vm1 })).statusCode).toBe(200);
    // A two-handle FPGA shows the binder's side: no second instance on a marked device.
    const marked = await req('POST', `/accelerators/${gpu!.id}/maintenance`);
    expect(marked.statusCode).toBe(200);
    expect(marked.json()).toMatchObject({ state: 'attached', maintenance: { mark: 'draining', scopes: ['device'], consumers: [{ instanceUuid: vm1 }] } });
    expect(usable(gpu!.id)).toBe(false);
    // Marking twice is harmless (idempotent 200).
    expect((await req('POST', `/accelerators/${gpu!.id}/maintenance`)).statusCode).toBe(200);

    const fpga = s.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await req('POST', `/accelerators/${fpga.id}/enable`);
    await req('POST', `/accelerators/${fpga.id}/maintenance`);
    const refused = await req('POST', `/accelerators/${fpga.id}/attach`, { instanceUuid: vm2 });
    expect(refused.statusCode).toBe(409);
    expect(view(fpga.id).allocations).toEqual([]);

    expect((await req('POST', `/accelerators/${gpu!.id}/detach`, { instanceUuid: vm1 })).statusCode).toBe(200);
    expect(view(gpu!.id).maintenance).toMatchObject({ mark: 'maintenance', consumers: [] });
    expect(view(gpu!.id).tags).toEqual(expect.arrayContaining(['maintenance', 'reserved']));

    const cancelled = await req('DELETE', `/accelerators/${gpu!.id}/maintenance`);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json().maintenance).toBeNull();
    expect(usable(gpu!.id)).toBe(true);
    // A cancel twice is a clear 409.
    const again = await req('DELETE', `/accelerators/${gpu!.id}/maintenance`);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'maintenance.not_marked' });
  });
});

describe('host drain', () => {
  it('reserves every device at once, binds nothing new, finishes when the instances leave, and can be cancelled midway', async () => {
    const gpus = await enabledGpus();
    for (const [g, vm] of [
      [gpus[0]!, vm1],
      [gpus[1]!, vm2],
    ] as const) {
      expect((await req('POST', `/accelerators/${g.id}/attach`, { instanceUuid: vm })).statusCode).toBe(200);
    }
    const fpga = s.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await req('POST', `/accelerators/${fpga.id}/enable`);
    // One device has its own mark already: the drain must not take it over.
    await req('POST', `/accelerators/${fpga.id}/maintenance`);

    const drain = await req('POST', '/hosts/compute-1/drain');
    expect(drain.statusCode).toBe(200);
    expect(drain.json().state).toBe('draining');
    for (const a of s.conductor.listAccelerators({ host: 'compute-1' })) {
      expect(a.maintenance?.scopes).toContain('host');
      expect(usable(a.id)).toBe(false);
    }
    for (const g of gpus) expect(view(g.id)).toMatchObject({ state: 'attached', maintenance: { mark: 'draining' } });
    expect((await req('POST', `/accelerators/${fpga.id}/attach`, { instanceUuid: vm3 })).statusCode).toBe(409);
    // Nova binding an ARQ to it (Placement chose it before the mark): the binder refuses too.
    await expect(s.conductor.rooms.arqs.attachFor(randomUUID(), { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: vm3 })).rejects.toThrow(
      /its host compute-1 is being drained.*cyborg host drain compute-1 --cancel/,
    );
    expect(view(fpga.id).allocations).toEqual([]);

    // One instance leaves; the drain is still waiting for the other.
    await req('POST', `/accelerators/${gpus[0]!.id}/detach`, { instanceUuid: vm1 });
    expect((await req('GET', '/hosts/compute-1/drain')).json().state).toBe('draining');

    // Cancelled midway: the remaining instance never noticed, the device's own mark stays.
    const cancelled = await req('DELETE', '/hosts/compute-1/drain');
    expect(cancelled.statusCode).toBe(200);
    expect(view(gpus[1]!.id)).toMatchObject({ state: 'attached', allocations: [{ instanceUuid: vm2 }], maintenance: null });
    expect(usable(gpus[0]!.id)).toBe(true);
    expect(view(fpga.id).maintenance).toMatchObject({ scopes: ['device'] });
    expect((await req('DELETE', '/hosts/compute-1/drain')).json()).toMatchObject({ code: 'maintenance.not_marked' });

    // Drained again, it finishes once the last instance leaves.
    await req('POST', '/hosts/compute-1/drain');
    await req('POST', `/accelerators/${gpus[1]!.id}/detach`, { instanceUuid: vm2 });
    const done = await req('GET', '/hosts/compute-1/drain');
    expect(done.json().state).toBe('drained');
    expect(done.json().accelerators.every((a: AcceleratorView) => a.maintenance?.mark === 'maintenance')).toBe(true);
  });

  it('answers 404 for a host nobody knows', async () => {
    const res = await req('POST', '/hosts/no-such-host/drain');
    expect(res.statusCode).toBe(404);
    expect((await req('DELETE', '/hosts/no-such-host/drain')).statusCode).toBe(404);
  });
});
