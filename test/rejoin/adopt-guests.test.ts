import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import type { FnSpec } from '../fixtures/sysfs/build.js';
import { NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { persona } from '../api-v2/harness.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';

/**
 * A compute host moves from OpenStack Cyborg with its instances running: a guest holds an A16
 * vGPU whose mdev Cyborg's agent made (with Cyborg's handle uuid) and a whole H100. Our agent
 * starts on the host (real NATS and PostgreSQL) and reads libvirt's live domains; the conductor
 * adopts what the guest holds — the accelerators enabled, a Bound ARQ per handle for the
 * guest's instance, which Nova finds as it would have found Cyborg's — and makes nothing: the
 * mdev is the guest's already. Nova deleting the instance's ARQs gives everything back.
 */
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));
const HOST = 'gpu-adopt-1';
const INSTANCE = '7f3c2a10-5b4e-4d2f-9a61-0c8e1d2b3a4f';
const CYBORG_MDEV = 'b7d0c1e2-3f4a-4b5c-8d6e-7f8091a2b3c4';

/** The GPU host as the Cyborg agent left it: the A16's first VF carries the guest's mdev. */
function movedHost(): FnSpec[] {
  const spec = structuredClone(NVIDIA_HOST);
  const a16 = spec.find((f) => f.address === '0000:b1:00.0')!;
  const vf = a16.sriov!.vfs.find((v) => v.address === '0000:b1:00.4')!;
  vf.mdev = vf.mdev!.map((t) => ({ ...t, available: 0, devices: [CYBORG_MDEV] }));
  return spec;
}

describe.skipIf(!svc.nats || !svc.postgres)('a host moved from OpenStack Cyborg with running guests: their devices adopted (NATS, PostgreSQL)', () => {
  let s: Stack;
  let root: string;
  let guests: string;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  // Nova calls with the instance's owner's token (its project, from the guest's Nova metadata) and its service token.
  const nova = { ...persona.member, 'x-project-id': '4f0b2c6e8a1d4e3f9b7c5a2d1e0f3b6c', 'x-service-roles': 'service' };
  const get = (url: string) => s.app.inject({ method: 'GET', url, headers: nova });
  const named = (name: string) => s.conductor.listAccelerators({}).find((a) => a.name === `${HOST}_${name}`)!;
  const mdevFile = (rel: string): string => readFileSync(join(root, 'bus/pci/devices/0000:b1:00.4', rel), 'utf8');

  beforeAll(async () => {
    root = join(mkdtempSync(join(tmpdir(), 'cyborg-adopt-')), 'sys');
    const kernel = new SysfsKernel(root, movedHost());
    guests = join(mkdtempSync(join(tmpdir(), 'cyborg-libvirt-')), 'qemu');
    cpSync(join(fixtures, 'libvirt'), guests, { recursive: true });
    db = await freshDatabase('adopt_guests', { migrated: true });
    s = await startStack({
      hosts: [HOST],
      api: true,
      log: quietLogger(),
      bus: { natsUrl: svc.nats!, prefix: `t${process.pid}adopt` },
      journal: { databaseUrl: db.url },
      agent: { guestsDir: guests },
      drivers: (host) => [kernel.drives(new NvidiaGpuDriver({ host, sysfsRoot: root, filterSriovVfs: true, vgpuTypes: { 'nvidia-699': ['0000:b1:00.0'] } }))],
    });
  });
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it("adopts the guest's vGPU and GPU at the agent's first report: Nova finds its instance's ARQs Bound, the vGPU's handle being Cyborg's mdev", async () => {
    const arqs = await eventually(
      async () => {
        const res = await get(`/accelerator_requests?instance=${INSTANCE}&bind_state=resolved`);
        const list = res.json().arqs as Record<string, unknown>[];
        return list.length === 2 && list.every((a) => a.state === 'Bound') ? list : undefined;
      },
      { what: "the guest's ARQs bound", timeoutMs: 20_000 },
    );
    const byType = Object.fromEntries(arqs.map((a) => [a.attach_handle_type as string, a]));
    expect(byType.MDEV).toMatchObject({
      project_id: '4f0b2c6e8a1d4e3f9b7c5a2d1e0f3b6c',
      attach_handle_uuid: CYBORG_MDEV,
      instance_uuid: INSTANCE,
      hostname: HOST,
      device_rp_uuid: named('0000:b1:00.0').rpUuid,
    });
    expect(byType.PCI).toMatchObject({
      attach_handle_info: { bus: '43', device: '00', function: '0' },
      instance_uuid: INSTANCE,
      device_rp_uuid: named('0000:43:00.0').rpUuid,
    });
    expect(s.conductor.rejoins.get(HOST)).toBeDefined();
    expect((await s.conductor.rejoins.get(HOST))?.adopted.sort()).toEqual([CYBORG_MDEV, named('0000:43:00.0').allocations[0]!.handleUuid].sort());

    // Enabled for the guest that uses them, attached to its instance, audited as the conductor's.
    for (const name of ['0000:b1:00.0', '0000:43:00.0']) {
      expect(named(name)).toMatchObject({ state: 'attached', allocations: [{ instanceUuid: INSTANCE }] });
      expect((await s.conductor.history(named(name).id)).find((r) => r.event === 'ADOPT')).toMatchObject({
        actor: 'conductor',
        args: { instanceUuid: INSTANCE },
      });
    }
    // Nothing was made: the guest's mdev is the one Cyborg's agent made, still there.
    expect(mdevFile(`${CYBORG_MDEV}/remove`)).toBe('');
    expect(mdevFile('mdev_supported_types/nvidia-699/create')).toBe('');
    // The A10 nobody holds is left for the operator, as every new accelerator is.
    expect(named('0000:17:00.0')?.state ?? 'inactive').toBe('inactive');
  });

  it("adopts once: the agent's next start finds the records holding them", async () => {
    await s.restartAgent();
    const run = await eventually(
      async () => {
        const r = await s.conductor.rejoins.get(HOST);
        return r && r.agentId === s.agents[0]!.agentId ? r : undefined;
      },
      { what: 'the next session compared', timeoutMs: 20_000 },
    );
    expect(run).toMatchObject({ adopted: [], flagged: [] });
    expect((await get(`/accelerator_requests?instance=${INSTANCE}`)).json().arqs).toHaveLength(2);
  });

  it("Nova deletes the instance's ARQs: Cyborg's mdev is removed and both devices are ready again", async () => {
    // Nova destroys the guest first, then deletes its ARQs.
    rmSync(join(guests, 'instance-0000002a.xml'));
    expect((await s.app.inject({ method: 'DELETE', url: `/accelerator_requests?instance=${INSTANCE}`, headers: nova })).statusCode).toBe(204);
    await eventually(() => named('0000:b1:00.0').state === 'ready' && named('0000:43:00.0').state === 'ready', {
      what: 'both devices ready',
      timeoutMs: 20_000,
    });
    // The kernel took the mdev away (the stand-in rebuilt the tree without it).
    await s.agents[0]!.discoverAndReport();
    expect(() => mdevFile(`${CYBORG_MDEV}/remove`)).toThrow();
    expect(named('0000:b1:00.0').allocations).toEqual([]);
  });
});
