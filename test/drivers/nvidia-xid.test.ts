import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { register } from 'prom-client';
import { NvidiaGpuDriver, xidPolicy, type XidPolicy } from '../../drivers/nvidia/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { buildHost, NVIDIA_HOST } from '../fixtures/vendors/hosts.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An operator runs GPU hosts with `[gpu_devices] xid_command = dmesg --follow-new`: when the NVIDIA
 * driver logs an Xid, the device is judged at once, not at the next health poll (here there is no
 * poll at all). The kernel log is a stand-in replaying recorded lines (test/fixtures/vendors/xid/).
 */
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'vendors');
const FAKE_DMESG = join(FIXTURES, 'bin', 'fake-dmesg.sh');
const recorded = (name: string): string => readFileSync(join(FIXTURES, 'xid', name), 'latin1');
const base = '/cyborg/v1';
const timing = { driverOpTimeoutMs: 5_000, healthEnterAfter: 3, healthLeaveAfter: 3, healthStableMs: 0 };

describe('NVIDIA Xid events pushed from the kernel log', () => {
  let root: string;
  let dir: string;
  let s: Stack | undefined;
  beforeAll(() => {
    root = buildHost(NVIDIA_HOST, 'nvidia-xid');
  });
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  async function gpuHost(xidCommand: string[], refused?: string, policy?: XidPolicy): Promise<Stack> {
    dir = mkdtempSync(join(tmpdir(), 'cyborg-xid-'));
    if (refused) writeFileSync(join(dir, 'fail'), refused);
    const env = { ...process.env, FAKE_KMSG: join(dir, 'kmsg'), FAKE_KMSG_CALLS: join(dir, 'calls'), FAKE_KMSG_FAIL: join(dir, 'fail') };
    s = await startStack({
      api: true,
      hosts: ['gpu-1'],
      timing,
      agent: { healthIntervalMs: 0 },
      drivers: (host) => [new NvidiaGpuDriver({ host, sysfsRoot: root, filterSriovVfs: true, xidCommand, xidEnv: env, xidRetryMinMs: 200, xidPolicy: policy })],
    });
    return s;
  }
  const kernelSays = (text: string): void => appendFileSync(join(dir, 'kmsg'), text);
  const following = (): Promise<unknown> =>
    eventually(
      () => {
        try {
          return readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n').length;
        } catch {
          return 0;
        }
      },
      { what: 'the kernel log followed' },
    );
  const gpu = (st: Stack, address: string): AcceleratorView => st.conductor.listAccelerators().find((a) => a.name === `gpu-1_${address}`)!;

  it('quarantines the GPU that fell off the bus at once, degrades the one whose application faulted, and keeps the rest in service', async () => {
    // This site counts its tenants' page faults and engine exceptions against the card
    // (`[gpu_devices] xid_transient = 13, 31`; by default they are ignored).
    const st = await gpuHost(['sh', FAKE_DMESG, '--follow-new'], undefined, xidPolicy({ transient: [13, 31] }));
    await following();
    for (const a of st.conductor.listAccelerators())
      expect((await st.app.inject({ method: 'POST', url: `${base}/accelerators/${a.id}/enable`, payload: {} })).statusCode).toBe(200);

    kernelSays(recorded('fallen-off-bus.log'));
    const dead = gpu(st, '0000:1b:00.0');
    await eventually(() => st.conductor.getAccelerator(dead.id).health?.status === 'quarantined', { what: 'Xid 79 quarantined the H100', timeoutMs: 5_000 });
    expect(st.conductor.getAccelerator(dead.id)).toMatchObject({
      health: { fatal: true, reason: 'Xid 79: pid=0, name=, GPU has fallen off the bus.' },
      tags: expect.arrayContaining(['quarantined', 'reserved']),
    });

    // An application's faults on the other H100: degraded, not out for good; nobody else touched.
    kernelSays(recorded('app-fault.log'));
    const faulted = gpu(st, '0000:43:00.0');
    await eventually(() => st.conductor.getAccelerator(faulted.id).health?.status === 'degraded', { what: 'Xid 31 degraded the other H100', timeoutMs: 5_000 });
    expect(st.conductor.getAccelerator(faulted.id).health).toMatchObject({ fatal: false });
    for (const a of st.conductor.listAccelerators().filter((x) => x.id !== dead.id && x.id !== faulted.id)) expect(a.health?.status ?? 'ok').toBe('ok');
    // Every event is counted by code in the agent's /metrics, whatever its verdict.
    const counted = await register.getSingleMetricAsString('cyborg_gpu_xid_events_total');
    expect(counted).toMatch(/cyborg_gpu_xid_events_total\{code="79",verdict="fatal"\} [1-9]/);
    expect(counted).toMatch(/cyborg_gpu_xid_events_total\{code="31",verdict="transient"\} [1-9]/);

    // An informational Xid, another host's GPU, garbage: logged, nothing judged, the agent goes on.
    kernelSays(recorded('row-remap.log') + recorded('unknown-gpu.log') + recorded('garbage.log'));
    await eventually(() => st.lines.some((l) => l.msg.startsWith('xid: kernel log lines that name an Xid')), { what: 'the garbage logged' });
    expect(st.lines.some((l) => l.msg === 'xid: event for a GPU this driver has not discovered')).toBe(true);
    expect(st.lines.some((l) => l.msg === 'xid: informational event; the GPU stays in service')).toBe(true);
    expect(st.conductor.getAccelerator(faulted.id).health?.status).toBe('degraded');

    // Polls now answer: the fatal one stays out, the transient one comes back when stable.
    for (let i = 0; i < 3; i++) {
      await st.agents[0]!.checkHealth();
      await eventually(() => st.conductor.getAccelerator(faulted.id).health !== undefined, { what: 'judged' });
    }
    await eventually(() => st.conductor.getAccelerator(faulted.id).health?.status === 'ok', { what: 'the faulted H100 back in service' });
    expect(st.conductor.getAccelerator(dead.id).health?.status).toBe('quarantined');

    // The operator resets the dead one: the driver forgets its Xid, later polls keep it healthy.
    const reset = await st.app.inject({ method: 'POST', url: `${base}/accelerators/${dead.id}/reset`, payload: {} });
    expect(reset.statusCode).toBe(200);
    expect(reset.json()).toMatchObject({ health: { status: 'ok' } });
    await st.agents[0]!.checkHealth();
    await st.conductor.tree.acceleratorActor(dead.id).flushed();
    expect(st.conductor.getAccelerator(dead.id).health?.status).toBe('ok');
  });

  it('says once that the kernel log cannot be followed, keeps trying, and reports once it can', async () => {
    const missing = await gpuHost(['/nonexistent/dmesg', '--follow-new']);
    await eventually(() => missing.lines.some((l) => l.msg.startsWith('xid: cannot follow the kernel log') && String(l.reason).includes('not found')), {
      what: 'the missing binary logged',
    });
    expect(missing.conductor.listAccelerators()).toHaveLength(4);
    await missing.stop();
    s = undefined;

    // dmesg refused (no CAP_SYSLOG) at first, then allowed: the events after that are seen.
    const st = await gpuHost(['sh', FAKE_DMESG, '--follow-new'], 'dmesg: read kernel buffer failed: Operation not permitted\n');
    await eventually(
      () => st.lines.some((l) => l.msg.startsWith('xid: cannot follow the kernel log') && String(l.reason).includes('Operation not permitted')),
      { what: 'the refusal logged' },
    );
    rmSync(join(dir, 'fail'));
    await following();
    await eventually(() => st.lines.some((l) => l.msg.startsWith('xid: the kernel log is followed again')), { what: 'back', timeoutMs: 10_000 });
    expect(st.lines.filter((l) => l.msg.startsWith('xid: cannot follow the kernel log'))).toHaveLength(1);
    kernelSays(recorded('fallen-off-bus.log'));
    const dead = gpu(st, '0000:1b:00.0');
    await eventually(() => st.conductor.getAccelerator(dead.id).health?.status === 'quarantined', { what: 'Xid 79 seen after the outage', timeoutMs: 5_000 });
  });
});
