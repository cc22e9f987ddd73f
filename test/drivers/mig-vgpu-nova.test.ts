import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import { callJson, persona } from '../api-v2/harness.js';
import { NVIDIA_MIG_MIXED_HOST } from '../fixtures/vendors/hosts.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { SysfsKernel } from '../support/sysfs-kernel.js';

/**
 * Nova boots servers whose flavors ask for MIG slices, through Cyborg's v2 API as nova-conductor
 * calls it, on a real agent and conductor (NATS, PostgreSQL): on the A100, whose VFs carry the
 * MIG-backed vGPU types, the bind makes the profile's vGPU mdev with the handle's uuid (what
 * Nova's libvirt driver puts in the guest) and the delete removes it; on the H100, which has no
 * VFs, the ARQ ends BindFailed with the reason, and nothing is made.
 */
const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const HOST = 'gpu-mig-vm-1';
const SERVER = '6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e41';
const OTHER = '6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e42';

describe.skipIf(!svc.nats || !svc.postgres)('Nova binds MIG slices as MIG-backed vGPUs (v2 API; NATS, PostgreSQL)', () => {
  let s: Stack;
  let root: string;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const nova = persona.service;
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, body?: unknown) =>
    callJson(s.app, method, url, headers, body);
  const acc = (name: string) => {
    const a = s.conductor.listAccelerators({}).find((x) => x.name === `${HOST}_${name}`);
    if (!a) throw new Error(`no ${name}`);
    return a;
  };
  /** Every mdev on the A100's VFs, as `<vf> <type> <uuid>`. */
  const mdevs = (): string[] =>
    ['4', '5', '6'].flatMap((f) => {
      const types = join(root, 'bus', 'pci', 'devices', `0000:1b:00.${f}`, 'mdev_supported_types');
      return readdirSync(types).flatMap((t) => {
        try {
          return readdirSync(join(types, t, 'devices')).map((u) => `0000:1b:00.${f} ${t} ${u}`);
        } catch {
          return [];
        }
      });
    });

  async function boot(profile: string, deployable: string, server: string): Promise<string> {
    const created = await call('POST', '/accelerator_requests', nova, { device_profile_name: profile });
    expect(created.statusCode, created.body).toBe(201);
    const arq = created.json().arqs[0].uuid as string;
    const bind = await call('PATCH', '/accelerator_requests', nova, {
      [arq]: [
        { op: 'add', path: '/hostname', value: HOST },
        { op: 'add', path: '/device_rp_uuid', value: acc(deployable).rpUuid },
        { op: 'add', path: '/instance_uuid', value: server },
      ],
    });
    expect(bind.statusCode, bind.body).toBe(202);
    return arq;
  }
  const settled = (arq: string) =>
    eventually(
      async () => {
        const res = await call('GET', `/accelerator_requests/${arq}`, nova);
        return ['Bound', 'BindFailed'].includes(res.json().state) ? res.json() : undefined;
      },
      { what: `ARQ ${arq} resolved`, timeoutMs: 15_000 },
    );

  beforeAll(async () => {
    root = join(mkdtempSync(join(tmpdir(), 'cyborg-mig-nova-')), 'sys');
    const kernel = new SysfsKernel(root, NVIDIA_MIG_MIXED_HOST);
    const smi = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'a100-h100');
    cpSync(join(fixtures, 'nvidia-smi', 'a100-h100'), smi, { recursive: true });
    db = await freshDatabase('mig_vgpu_nova', { migrated: true });
    s = await startStack({
      hosts: [HOST],
      api: true,
      log: quietLogger(),
      bus: { natsUrl: svc.nats!, prefix: `t${process.pid}migvm` },
      journal: { databaseUrl: db.url },
      drivers: (host) => [kernel.drives(new NvidiaGpuDriver({ host, sysfsRoot: root, nvidiaSmi: ['sh', join(fixtures, 'bin', 'fake-nvidia-smi.sh'), smi] }))],
    });
    for (const a of s.conductor.listAccelerators({})) expect((await s.conductor.act(a.id, { type: 'ENABLE' })).state).toBe('ready');
    for (const [name, group] of [
      ['a100-3g20', { 'resources:CUSTOM_MIG_3G_20GB': '1', 'trait:CUSTOM_NVIDIA_20F1_MIG_3G_20GB': 'required' }],
      ['h100-1g10', { 'resources:CUSTOM_MIG_1G_10GB': '1', 'trait:CUSTOM_NVIDIA_2331_MIG_1G_10GB': 'required' }],
    ] as const) {
      expect((await call('POST', '/v2/device_profiles', persona.admin, [{ name, groups: [group] }])).statusCode).toBe(201);
    }
  });
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it("binds the A100's 3g.20gb: the ARQ is Bound with an MDEV handle whose uuid is the GRID A100-3-20C mdev made on a VF", async () => {
    const arq = await boot('a100-3g20', '0000:1b:00.0_MIG_3g.20gb', SERVER);
    const bound = await settled(arq);
    expect(bound).toMatchObject({
      state: 'Bound',
      attach_handle_type: 'MDEV',
      attach_handle_info: { asked_type: 'MIG-3g.20gb', bus: '1b', gpu_instance_id: '2' },
    });
    expect(mdevs()).toEqual([`0000:1b:00.4 nvidia-476 ${bound.attach_handle_uuid as string}`]);
    expect(acc('0000:1b:00.0_MIG_3g.20gb')).toMatchObject({ state: 'attached', allocations: [{ instanceUuid: SERVER }] });
  });

  it("Nova deletes the server's ARQs: the mdev is removed and the slice is ready again", async () => {
    expect((await call('DELETE', `/accelerator_requests?instance=${SERVER}`, nova)).statusCode).toBe(204);
    await eventually(() => mdevs().length === 0 && acc('0000:1b:00.0_MIG_3g.20gb').state === 'ready', { what: 'the mdev removed', timeoutMs: 15_000 });
  });

  it('a slice of the H100, which has no VFs to make a vGPU on, ends BindFailed with the reason; nothing is made', async () => {
    const arq = await boot('h100-1g10', '0000:43:00.0_MIG_1g.10gb', OTHER);
    expect(await settled(arq)).toMatchObject({ state: 'BindFailed', attach_handle_type: '' });
    expect(s.conductor.getArq(arq)?.error).toMatch(/MIG 1g.10gb \(GPU instance 9\): the GPU has no SR-IOV VFs/);
    expect(acc('0000:43:00.0_MIG_1g.10gb')).toMatchObject({ state: 'ready', allocations: [] });
    expect(mdevs()).toEqual([]);
  });
});
