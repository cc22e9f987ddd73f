import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import type { AcceleratorView, Capacity } from '../../model/index.js';
import type { FnSpec } from '../fixtures/sysfs/build.js';
import { NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';
import { allInSync, deleteTree, enableInPlacement, startGpuHost, stopAndTidy, uniqueHost, type Synced } from './harness.js';

/**
 * Issue 39's "Done when", with the real Placement: after each path that hands a device to a
 * consumer — the v2 bind after Nova's allocation, the operator's attach, an instance attach
 * (test/placement/handover.test.ts tells those three), a program-on-bind and a re-join's
 * adoption of a running guest (here) — Placement's usages and inventories show the device
 * consumed, and `cyborg capacity` equals Placement's sums cell by cell in every health state (ok,
 * degraded, quarantined) and maintenance state (none, the device marked, the host drained) of
 * held and idle devices alike, and after each is lifted.
 */

type Cells = Record<string, { total: number; reserved: number; used: number; free: number }>;

/** Placement's own sums over a stack's providers (not removed), by class, and the same cells of `cyborg capacity`. */
async function placementCells(s: Stack): Promise<Cells> {
  const out: Cells = {};
  for (const a of s.conductor.listAccelerators().filter((x) => x.state !== 'removed' && x.resourceClass)) {
    const [inv, usages] = await Promise.all([s.placement.getInventories(a.rpUuid), s.placement.getUsages(a.rpUuid)]);
    for (const [rc, r] of Object.entries(inv.inventories)) {
      const o = (out[rc] ??= { total: 0, reserved: 0, used: 0, free: 0 });
      o.total += r.total;
      o.reserved += r.reserved;
      o.used += usages[rc] ?? 0;
      o.free += r.total - r.reserved - (usages[rc] ?? 0);
    }
  }
  return out;
}
async function capacityCells(s: Stack): Promise<Cells> {
  const c = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/capacity' })).json() as Capacity;
  return Object.fromEntries(c.fleet.map((x) => [x.resourceClass, { total: x.total, reserved: x.reserved, used: x.used, free: x.free }]));
}
/** Capacity equals Placement, once the sync has caught up with the last change. */
async function agree(s: Stack, what: string): Promise<void> {
  await eventually(() => s.conductor.listAccelerators().every((a) => s.sync.status(a.id)?.status === 'in_sync'), {
    what: `in sync: ${what}`,
    timeoutMs: 30_000,
  });
  await eventually(async () => JSON.stringify(await capacityCells(s)) === JSON.stringify(await placementCells(s)), {
    what: `capacity = Placement: ${what}`,
    timeoutMs: 20_000,
  });
  expect(await capacityCells(s), what).toEqual(await placementCells(s));
}
const usedIn = async (s: Stack, a: AcceleratorView): Promise<number> => (await s.placement.getUsages(a.rpUuid))[a.resourceClass!] ?? 0;

describe.skipIf(!svc.placement)('Placement tells the truth at the end of every path (issue 39)', () => {
  let s: Synced;
  let gpus: AcceleratorView[];
  let fpga: AcceleratorView;

  beforeAll(async () => {
    // Two bad checks quarantine a card (one makes it degraded); a fatal one quarantines at once.
    s = await startGpuHost(svc.placement!, 4, 2);
    await allInSync(s);
    gpus = s.conductor.listAccelerators({ type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));
    fpga = s.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    for (const a of [...gpus, fpga]) await enableInPlacement(s, a);
    await agree(s, 'everything enabled, nothing held');
  });
  afterAll(() => stopAndTidy(s));

  it('a program-on-bind for an instance Nova did not schedule there is consumed in Placement, and freed by the unbind', async () => {
    const bitstream = randomUUID();
    await s.conductor.documents.createProfile({
      uuid: randomUUID(),
      name: `truth-program-${bitstream.slice(0, 8)}`,
      description: null,
      groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': bitstream }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const arq = await s.conductor.createArq({ deviceProfileName: `truth-program-${bitstream.slice(0, 8)}`, deviceProfileGroupId: 0, projectId: null });
    const bound = await s.conductor.bindArq(arq.uuid, { hostname: s.host, deviceRpUuid: fpga.rpUuid, instanceUuid: randomUUID() });
    expect(bound.state).toBe('Bound');
    expect(s.conductor.getAccelerator(fpga.id)).toMatchObject({ state: 'attached', program: { bitstreamId: bitstream } });
    await agree(s, 'a program-on-bind');
    expect(await usedIn(s, fpga)).toBe(1);
    await s.conductor.deleteArq(arq.uuid);
    await agree(s, 'the programmed FPGA unbound');
    expect(await usedIn(s, fpga)).toBe(0);
  });

  it('capacity equals Placement in every health and maintenance state, of held and idle devices', async () => {
    const [heldA, heldB, idleA, idleB] = gpus as [AcceleratorView, AcceleratorView, AcceleratorView, AcceleratorView];
    for (const g of [heldA, heldB]) await s.conductor.attach(g.id, { instanceUuid: randomUUID() });
    await agree(s, 'two GPUs held');
    const fake = s.fakes[0]!;
    const badCheck = async (ids: string[], fault: 'transient' | 'fatal'): Promise<void> => {
      for (const id of ids) fake.injectHealthFault(id, fault, fault === 'fatal' ? 'Xid 79: GPU has fallen off the bus' : 'Xid 94: contained ECC error');
      await s.agents[0]!.checkHealth();
      for (const id of ids) fake.recover(id);
    };
    const healthIs = (g: AcceleratorView, status: string): Promise<boolean> =>
      eventually(() => s.conductor.getAccelerator(g.id).health?.status === status, { what: `${g.name} ${status}` });
    await badCheck([heldA.id, idleA.id], 'transient');
    for (const g of [heldA, idleA]) await healthIs(g, 'degraded');
    await agree(s, 'a held and an idle GPU degraded');
    await badCheck([heldA.id, idleA.id], 'fatal');
    for (const g of [heldA, idleA]) await healthIs(g, 'quarantined');
    await agree(s, 'a held and an idle GPU quarantined');
    for (const g of [heldB, idleB]) await s.conductor.act(g.id, { type: 'MAINTAIN', scope: 'device' });
    await agree(s, 'a held and an idle GPU marked for maintenance, beside the quarantined ones');
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/hosts/${s.host}/drain`, payload: {} })).statusCode).toBe(200);
    await agree(s, 'the host drained');
    for (const g of [heldA, heldB]) expect(await usedIn(s, g), g.name).toBe(1);
    expect((await s.app.inject({ method: 'DELETE', url: `/cyborg/v1/hosts/${s.host}/drain` })).statusCode).toBeLessThan(300);
    await agree(s, 'the drain lifted');
    for (const g of [heldA, idleA]) await s.conductor.act(g.id, { type: 'CLEAR_HEALTH' });
    await agree(s, 'the quarantines cleared');
    for (const g of [heldB, idleB]) await s.conductor.act(g.id, { type: 'END_MAINTENANCE', scope: 'device' });
    await agree(s, 'every mark lifted');
    for (const g of [heldA, heldB]) await s.conductor.detach(g.id, {});
    await agree(s, 'nothing held');
    for (const g of gpus) expect(await usedIn(s, g), g.name).toBe(0);
  });
});

/**
 * The re-join's hand-over: a host moved from OpenStack Cyborg with a guest running on an A16
 * vGPU (Cyborg's mdev) and a whole H100. The agent's first report adopts them; Nova allocated
 * nothing here for them, so Cyborg holds them in Placement, and capacity agrees.
 */
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));
const INSTANCE = '7f3c2a10-5b4e-4d2f-9a61-0c8e1d2b3a4f';
const CYBORG_MDEV = 'b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4';

describe.skipIf(!svc.placement)('a re-join adopting a running guest is consumed in Placement (issue 39)', () => {
  let s: Stack;
  const host = uniqueHost('truth-rj');
  const named = (name: string): AcceleratorView => s.conductor.listAccelerators({}).find((a) => a.name === `${host}_${name}`)!;

  beforeAll(async () => {
    const spec: FnSpec[] = structuredClone(NVIDIA_HOST);
    const vf = spec.find((f) => f.address === '0000:b1:00.0')!.sriov!.vfs.find((v) => v.address === '0000:b1:00.4')!;
    vf.mdev = vf.mdev!.map((t) => ({ ...t, available: 0, devices: [CYBORG_MDEV] }));
    const root = join(mkdtempSync(join(tmpdir(), 'cyborg-truth-rj-')), 'sys');
    const kernel = new SysfsKernel(root, spec);
    const guests = join(mkdtempSync(join(tmpdir(), 'cyborg-libvirt-')), 'qemu');
    cpSync(join(fixtures, 'libvirt'), guests, { recursive: true });
    s = await startStack({
      hosts: [host],
      api: true,
      agent: { guestsDir: guests },
      placement: { url: svc.placement!, createRoots: true },
      drivers: (h) => [kernel.drives(new NvidiaGpuDriver({ host: h, sysfsRoot: root, filterSriovVfs: true, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } }))],
    });
  });
  afterAll(async () => {
    await s?.stop();
    await deleteTree(s.placement, host);
  });

  it("the guest's vGPU and GPU show used in Placement once adopted, capacity agrees, and Nova's delete of its ARQs frees them", async () => {
    await eventually(() => named('0000:43:00.0')?.state === 'attached' && named('0000:b1:00.0')?.state === 'attached', {
      what: 'the guest adopted',
      timeoutMs: 20_000,
    });
    await agree(s, "the guest's devices adopted");
    expect(await usedIn(s, named('0000:b1:00.0'))).toBe(1);
    expect(await usedIn(s, named('0000:43:00.0'))).toBe(1);
    for (const arq of s.conductor.listArqs({}).filter((a) => a.binding?.instanceUuid === INSTANCE)) await s.conductor.deleteArq(arq.uuid);
    await agree(s, "the guest's ARQs deleted");
    expect(await usedIn(s, named('0000:b1:00.0'))).toBe(0);
    expect(await usedIn(s, named('0000:43:00.0'))).toBe(0);
  });
});
