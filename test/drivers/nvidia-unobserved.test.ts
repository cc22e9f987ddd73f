import { cpSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentCache } from '../../actors/agent/index.js';
import { NvidiaGpuDriver } from '../../drivers/nvidia/index.js';
import { healthLabels } from '../../metrics/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * A GPU host whose tools fail the way they fail in production — the NVIDIA driver package
 * upgraded without a reboot ("Failed to initialize NVML: Driver/library version mismatch"), a
 * wedged GPU that makes nvidia-smi hang, an exit status, truncated XML, a vGPU type the card no
 * longer offers — through a real agent and conductor on NATS and PostgreSQL: no device leaves,
 * none changes state, each one nobody could observe reads health `unknown` with the tool's words,
 * and only a discovery that succeeds without a device removes it.
 */
const fixtures = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const FAILING_SMI = join(fixtures, 'bin', 'failing-nvidia-smi.sh');
const HOST = 'gpu-unobserved-1';
const log = quietLogger();

describe.skipIf(!svc.nats || !svc.postgres)('nvidia_gpu_driver: discovery failures on a real agent and conductor (NATS, PostgreSQL)', () => {
  let root: string;
  let smi: string;
  let s: Stack;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  const byName = (): Map<string, AcceleratorView> => new Map(s.conductor.listAccelerators({}).map((a) => [a.name.slice(HOST.length + 1), a]));
  const fail = (mode: string): void => writeFileSync(join(smi, 'failure'), mode);
  const rediscover = async (): Promise<Map<string, AcceleratorView>> => {
    await s.agents[0]!.discoverAndReport();
    return byName();
  };
  const MIG = ['0000:1b:00.0_MIG_1g.10gb', '0000:1b:00.0_MIG_2g.20gb', '0000:1b:00.0_MIG_3g.40gb'];
  const ALL = ['0000:17:00.0', ...MIG, '0000:43:00.0', '0000:b1:00.0'];

  beforeAll(async () => {
    root = buildHost(NVIDIA_HOST, 'nvidia-unobserved');
    smi = join(mkdtempSync(join(tmpdir(), 'cyborg-smi-')), 'h100');
    cpSync(join(fixtures, 'nvidia-smi', 'h100'), smi, { recursive: true });
    db = await freshDatabase('nvidia_unobserved', { migrated: true });
    const memory = await AgentCache.open(mkdtempSync(join(tmpdir(), 'cyborg-agent-')), HOST, [], log);
    s = await startStack({
      hosts: [HOST],
      api: true,
      log,
      bus: { natsUrl: svc.nats!, prefix: `t${process.pid}unobs` },
      journal: { databaseUrl: db.url },
      agent: { memory },
      drivers: (host) => [
        new NvidiaGpuDriver({
          host,
          sysfsRoot: root,
          nvidiaSmi: ['sh', FAILING_SMI, smi],
          commandTimeoutMs: 1_000,
          vgpuTypes: { 'nvidia-590': ['0000:17:00.0'], 'nvidia-699': ['0000:b1:00.0'] },
        }),
      ],
    });
    // The pGPU in service: its state must survive every failure below.
    const h100 = byName().get('0000:43:00.0')!;
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${h100.id}/enable`, payload: {} })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it('reports every GPU while nvidia-smi works: two vGPU cards, three MIG profiles, one pGPU', () => {
    const accs = byName();
    expect([...accs.keys()].sort()).toEqual(ALL);
    for (const a of accs.values()) expect(a.health?.status ?? 'ok').toBe('ok');
  });

  it.each([
    ['mismatch', /Failed to initialize NVML: Driver\/library version mismatch/],
    ['hang', /no answer within 1000 ms, killed/],
    ['exit', /exited with 15: Unable to determine the device handle for GPU0000:1B:00.0: Unknown Error/],
    ['truncated', /output not understood: not XML/],
  ])(
    "nvidia-smi failing (%s) removes nothing: the MIG GPU keeps its last record, marked unknown with the tool's words; the rest is reported from sysfs",
    async (mode, words) => {
      fail(mode);
      const accs = await rediscover();
      expect([...accs.keys()].sort()).toEqual(ALL);
      for (const name of MIG) {
        const a = accs.get(name)!;
        expect(a.state).toBe('inactive');
        expect(a.health).toMatchObject({ status: 'unknown' });
        expect(a.health?.reason).toMatch(words);
      }
      // nvidia-smi said at the last success that this one is not in MIG mode: sysfs tells all of it.
      expect(accs.get('0000:43:00.0')).toMatchObject({ state: 'ready', health: { status: 'ok' } });
      expect(accs.get('0000:b1:00.0')!.health?.status).toBe('ok');
      // Alerts read it as such: status unknown, the reason's class, never a fault severity.
      expect(healthLabels(accs.get(MIG[0]!)!, 'online')).toEqual({ status: 'unknown', severity: 'none', reason_class: 'unobserved' });
      // The API shows it as the conductor does.
      const id = accs.get(MIG[2]!)!.id;
      const r = await s.app.inject({ method: 'GET', url: `/cyborg/v1/accelerators/${id}` });
      expect(r.json()).toMatchObject({ state: 'inactive', health: { status: 'unknown' } });
    },
  );

  it('a vGPU type one card no longer offers fails that card alone, kept as it was', async () => {
    fail('');
    const types = join(root, 'bus/pci/devices/0000:b1:00.4/mdev_supported_types');
    const types5 = join(root, 'bus/pci/devices/0000:b1:00.5/mdev_supported_types');
    renameSync(join(types, 'nvidia-699'), join(types, 'nvidia-700'));
    renameSync(join(types5, 'nvidia-699'), join(types5, 'nvidia-700'));
    try {
      const accs = await rediscover();
      expect([...accs.keys()].sort()).toEqual(ALL);
      const a16 = accs.get('0000:b1:00.0')!;
      expect(a16).toMatchObject({ state: 'inactive', resourceClass: 'VGPU', capacity: 2, health: { status: 'unknown' } });
      expect(a16.health?.reason).toMatch(/offers no vGPU type nvidia-699/);
      for (const name of MIG) expect(accs.get(name)!.health?.status ?? 'ok').toBe('ok');
    } finally {
      renameSync(join(types, 'nvidia-700'), join(types, 'nvidia-699'));
      renameSync(join(types5, 'nvidia-700'), join(types5, 'nvidia-699'));
    }
  });

  it('an agent restarted while nvidia-smi still fails keeps the MIG records from its cache', async () => {
    fail('mismatch');
    await s.restartAgent();
    await eventually(() => byName().get(MIG[0]!)?.health?.status === 'unknown', { what: 'the MIG profiles marked unknown after the restart' });
    const accs = byName();
    expect([...accs.keys()].sort()).toEqual(ALL);
    expect(accs.get('0000:43:00.0')!.state).toBe('ready');
  });

  it("a report without a failed driver's devices (an agent whose cache is gone) removes none of them", async () => {
    const host = s.conductor.hosts.get(HOST)!;
    const before = host.inventory().filter((d) => d.driver === 'nvidia_gpu_driver').length;
    await host.applyInventory([], { actor: 'agent:test' }, [{ driver: 'nvidia_gpu_driver', reason: 'sysfs: EIO' }]);
    const accs = byName();
    expect([...accs.keys()].sort()).toEqual(ALL);
    for (const a of accs.values()) expect(a.health).toMatchObject({ status: 'unknown', reason: 'not observed: sysfs: EIO' });
    expect(accs.get('0000:43:00.0')!.state).toBe('ready');
    expect(host.inventory().filter((d) => d.driver === 'nvidia_gpu_driver')).toHaveLength(before);
  });

  it('observed again once nvidia-smi answers; a GPU a successful discovery no longer sees is removed', async () => {
    fail('');
    let accs = await rediscover();
    for (const a of accs.values()) expect(a.health?.status ?? 'ok').toBe('ok');
    // A successful discovery without the unused pGPU (the card pulled): only now it goes.
    const gone = join(root, 'bus/pci/devices/0000:43:00.0');
    const aside = join(mkdtempSync(join(tmpdir(), 'cyborg-pulled-')), 'link');
    renameSync(gone, aside);
    try {
      accs = await rediscover();
      expect(accs.get('0000:43:00.0')!.state).toBe('removed');
    } finally {
      renameSync(aside, gone);
      rmSync(join(smi, 'failure'), { force: true });
    }
  });
});

describe.skipIf(!svc.nats || !svc.postgres)('a driver failing whole on an agent that lost its cache (NATS, PostgreSQL)', () => {
  const host = 'gpu-unobserved-2';
  let s: Stack;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let broken: string | undefined;
  afterAll(async () => {
    await s?.stop();
    await db?.drop();
  });

  it('names the driver and its error; the conductor keeps every device it recorded for it', async () => {
    const root = buildHost(NVIDIA_HOST, 'nvidia-no-cache');
    db = await freshDatabase('nvidia_no_cache', { migrated: true });
    s = await startStack({
      hosts: [host],
      log,
      bus: { natsUrl: svc.nats!, prefix: `t${process.pid}nocache` },
      journal: { databaseUrl: db.url },
      drivers: (h) => {
        const gpu = new NvidiaGpuDriver({ host: h, sysfsRoot: root, filterSriovVfs: true });
        // The host's sysfs unreadable this time (an I/O error): the whole driver fails.
        return [
          Object.assign(Object.create(gpu) as NvidiaGpuDriver, {
            discoverPartial: () => (broken ? Promise.reject(new Error(broken)) : gpu.discoverPartial()),
          }),
        ];
      },
    });
    const names = (): string[] =>
      s.conductor
        .listAccelerators({})
        .filter((a) => a.state !== 'removed')
        .map((a) => a.name)
        .sort();
    const before = names();
    expect(before).toHaveLength(4);
    broken = 'readdir /sys/bus/pci/devices: EIO: i/o error';
    // A new agent process with no cache: it has no record of the GPUs to send.
    await s.restartAgent();
    await eventually(() => s.conductor.listAccelerators({}).every((a) => a.health?.status === 'unknown'), { what: 'the GPUs marked unknown' });
    expect(names()).toEqual(before);
    expect(s.conductor.listAccelerators({})[0]!.health?.reason).toBe('not observed: readdir /sys/bus/pci/devices: EIO: i/o error');
  });
});
