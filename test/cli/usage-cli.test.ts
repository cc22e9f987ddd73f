import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import type { AcceleratorUsage } from '../../model/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { eventually } from '../support/eventually.js';
import { cyborg } from './harness.js';

/**
 * An operator asks the CLI what the devices are doing and who holds them: `cyborg usage` for one
 * accelerator or a whole host, `cyborg projects` for what each project's instances hold.
 */
describe('cyborg usage and cyborg projects against a running all-in-one', () => {
  let running: Running;
  const run = (...argv: string[]) => cyborg(...argv, '--url', running.url);
  const GPU = 'usage-host_fake_gpu_40';

  beforeAll(async () => {
    // The fake driver's two GPUs, FPGA and a NIC's VFs; telemetry ten times a second so the story is quick.
    const config = loadConfig(
      { host: 'usage-host', listen: { address: '127.0.0.1', port: 0 }, logLevel: 'silent', logPretty: false, timing: { telemetryIntervalMs: 100 } },
      {},
    );
    running = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal() });
    await eventually(() => running.conductor.listAccelerators().every((a) => running.conductor.usage.samples(a.id).length >= 3), {
      what: 'three samples of every device',
    });
  });
  afterAll(async () => {
    await running?.stop();
  });

  it("shows one accelerator's recent samples by name, oldest first, and the same as JSON", async () => {
    const r = await run('usage', GPU);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/│ AT\s+│ UTIL % │ MEMORY\s+│ TEMP °C │ POWER W │/);
    expect(r.stdout).toMatch(/│ 20\d\d-\d\d-\d\dT[\d:.]+Z │ \d+\.\d\s+│ \d+ \/ 16384 MiB │ \d+\.\d\s+│ \d+\.\d\s+│/);
    const json = JSON.parse((await run('usage', GPU, '--json')).stdout) as AcceleratorUsage;
    expect(json.host).toBe('usage-host');
    expect(json.samples.length).toBeGreaterThanOrEqual(3);
    expect(json.samples.map((s) => s.at)).toEqual([...json.samples.map((s) => s.at)].sort());
  });

  it("shows a host's devices at a glance, each with what its driver measures", async () => {
    const r = await run('usage', '--host', 'usage-host');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/│ ACCELERATOR\s+│ TYPE\s+│ STATE\s+│ IN USE │ SAMPLES │ UTIL % NOW │ UTIL % MEAN │ MEMORY\s+│ TEMP °C │ POWER W │ LATEST/);
    expect(r.stdout).toMatch(new RegExp(`│ ${GPU}\\s+│ GPU\\s+│ inactive │ 0/1\\s+│ \\d+\\s+│ \\d+\\.\\d\\s+│ \\d+\\.\\d\\s+│ \\d+ / 16384 MiB`));
    // A NIC's VF measures only how busy it is: its memory, temperature and power cells are empty.
    expect(r.stdout).toMatch(/│ usage-host_fake_nic_80_vf0\s+│ NIC\s+│ inactive │ 0\/1\s+│ \d+\s+│ \d+\.\d\s+│ \d+\.\d\s+│\s+│\s+│\s+│ 20/);
  });

  it('says what each project holds once instances are attached', async () => {
    expect((await run('projects')).stdout).toBe('No project holds an accelerator.\n');
    const [a, b] = running.conductor.listAccelerators({ type: 'GPU' });
    for (const x of [a!, b!]) await running.conductor.act(x.id, { type: 'ENABLE' });
    await running.conductor.attach(a!.id, { instanceUuid: 'vm-blue-1', projectId: 'blue' });
    await running.conductor.attach(b!.id, { instanceUuid: 'vm-green-1', projectId: 'green' });

    const r = await run('projects');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/│ PROJECT │ ACCELERATORS │ ALLOCATIONS │ INSTANCES │ BY TYPE │ BY RESOURCE CLASS │/);
    expect(r.stdout).toMatch(/│ blue\s+│ 1\s+│ 1\s+│ 1\s+│ GPU=1\s+│ PGPU=1\s+│/);
    expect(r.stdout).toMatch(/│ green\s+│ 1\s+│ 1\s+│ 1\s+│ GPU=1\s+│ PGPU=1\s+│/);
    const green = JSON.parse((await run('projects', '--project', 'green', '--json')).stdout);
    expect(green).toEqual([
      { projectId: 'green', accelerators: 1, allocations: 1, instances: ['vm-green-1'], byDeviceType: { GPU: 1 }, byResourceClass: { PGPU: 1 } },
    ]);
    expect((await run('projects', '--project', 'red')).stdout).toBe('Project red holds no accelerator.\n');
    // The attached GPU now works: the host's table says it is in use.
    expect((await run('usage', '--host', 'usage-host')).stdout).toMatch(new RegExp(`│ ${GPU}\\s+│ GPU\\s+│ attached │ 1/1`));
  });

  it('answers a wrong question with a clear message and the exit code scripts expect', async () => {
    const neither = await run('usage');
    expect([neither.code, neither.stderr]).toEqual([2, expect.stringContaining('name an accelerator (id or name) or --host <host>, not both')]);
    expect((await run('usage', GPU, '--host', 'usage-host')).code).toBe(2);
    const nowhere = await run('usage', '--host', 'nowhere');
    expect(nowhere.code).toBe(3);
    expect(nowhere.stderr).toMatch(/nowhere/);
    expect((await run('usage', 'no-such-device')).code).toBe(3);
  });
});
