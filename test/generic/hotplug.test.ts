import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { UeventSourceOptions } from '../../actors/agent/uevents.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { GenericDriver } from '../../drivers/generic/index.js';
import { hotplugFor } from '../../roles/drivers.js';
import { buildTree, GPU_HOST, port, type FnSpec } from '../fixtures/sysfs/build.js';
import { FAKE_UDEVADM as UDEVADM, fakeUdevadm, GPU_HOST_WITHOUT_V100 as WITHOUT_V100, recorded, V100 } from '../fixtures/udevadm/recorded.js';
import { eventually } from '../support/eventually.js';
import { startStack } from '../support/stack.js';

/** The accelerator's name: host and PCI address, as sanitizeName writes it. */
const acc = (address: string): string => `hotplug-host_${address.replace(/[:.]/g, '_')}`;
/** A T4 that comes with its own PCIe switch: NVIDIA's NF200 (10de:05b1, class 0x0604) in front of it. */
const BEHIND_NF200: FnSpec[] = [
  port('0000:b0:00.0', 1, 130),
  {
    address: '0000:b1:00.0',
    port: '0000:b0:00.0',
    cls: '060400',
    vendor: '10de',
    device: '05b1',
    subVendor: '0000',
    subDevice: '0000',
    numa: 1,
    iommu: 131,
    driver: 'pcieport',
  },
  {
    address: '0000:b2:00.0',
    port: '0000:b0:00.0',
    cls: '030200',
    vendor: '10de',
    device: '1eb8',
    subDevice: '12a2',
    numa: 1,
    iommu: 132,
    driver: 'nvidia',
    bootVga: false,
  },
];

/**
 * A compute host with the generic driver over a sysfs tree the story changes (cards plugged in and
 * pulled), its agent watching kernel events through the stand-in udevadm, which replays the
 * recorded events the story appends. The periodic scan is a minute, as in production: whatever is
 * seen sooner was seen through hot-plug.
 */
async function hotplugHost(opts: { allowList?: string; discoveryIntervalMs?: number; command?: string[] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-hotplug-'));
  const root = join(dir, 'sys');
  const udev = fakeUdevadm(dir);
  buildTree(root, WITHOUT_V100, ['vfio-pci']);
  const host = 'hotplug-host';
  const discoveries = { n: 0 };
  const hotplug: UeventSourceOptions = {
    command: opts.command ?? [UDEVADM],
    subsystems: ['pci', 'mdev'],
    retryMinMs: 200,
    retryMaxMs: 1_600,
    env: { ...process.env, ...udev.env },
  };
  const stack = await startStack({
    hosts: [host],
    drivers: () => {
      const generic = new GenericDriver({ host, sysfsRoot: root, hostOps: 'simulate', allowList: opts.allowList ?? '' });
      const discover = generic.discover.bind(generic);
      generic.discover = () => (discoveries.n++, discover());
      return [generic];
    },
    agent: { discoveryIntervalMs: opts.discoveryIntervalMs ?? 60_000, hotplug },
  });
  const { files, runs, kernelSays } = udev;
  return {
    stack,
    root,
    files,
    discoveries,
    runs,
    kernelSays,
    /** Waits for the `n`th run of udevadm to follow the events, and returns its pid. */
    monitorRun: async (n: number) => Number((await eventually(() => runs()[n - 1], { what: `udevadm run ${n}`, timeoutMs: 10_000 }))[0]),
    names: () =>
      stack.conductor
        .listAccelerators()
        .filter((a) => a.state !== 'removed')
        .map((a) => a.name)
        .sort(),
    logged: (msg: string) => stack.lines.filter((l) => l.msg === msg),
    stop: async () => {
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('hot-plug: the agent sees a card come and go from kernel events, not at the next scan', () => {
  let h: Awaited<ReturnType<typeof hotplugHost>> | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('reports a GPU plugged into a running host within a second or two, and its removal as fast', async () => {
    const t = (h = await hotplugHost());
    await t.monitorRun(1);
    expect(t.runs()[0]!.slice(1)).toEqual(['monitor', '--kernel', '--property', '--subsystem-match=pci', '--subsystem-match=mdev']);
    expect(t.names()).toEqual([acc('0000:3b:00.0'), acc('0000:86:00.1'), acc('0000:86:00.2')]);
    expect(t.discoveries.n).toBe(1);

    // The slot powers up: the kernel adds the V100's function, vfio-pci binds it.
    buildTree(t.root, GPU_HOST, ['vfio-pci']);
    const plugged = Date.now();
    t.kernelSays(recorded('v100-plug.events'));
    await eventually(() => t.names().includes(acc(V100)), { what: 'the V100 reported', timeoutMs: 10_000 });
    expect(Date.now() - plugged).toBeLessThan(5_000);
    // add and bind are one burst: one discovery.
    expect(t.discoveries.n).toBe(2);
    expect(t.logged('hot-plug: kernel events; discovering now')[0]).toMatchObject({ events: 2, actions: { add: 1, bind: 1 }, devices: [V100] });

    // The operator pulls it (pciehp: unbind, remove): it is removed at once, the rest untouched.
    buildTree(t.root, WITHOUT_V100, ['vfio-pci']);
    const pulled = Date.now();
    t.kernelSays(recorded('v100-unplug.events'));
    const v100 = t.stack.conductor.listAccelerators().find((a) => a.name === acc(V100))!;
    await eventually(() => t.stack.conductor.getAccelerator(v100.id).state === 'removed', { what: 'the V100 removed', timeoutMs: 10_000 });
    expect(Date.now() - pulled).toBeLessThan(5_000);
    expect(t.names()).toHaveLength(3);
  });

  it('turns a flood of 1,000 events (an SR-IOV enable of 500 VFs) into one or a few discoveries', async () => {
    const t = (h = await hotplugHost());
    await t.monitorRun(1);
    const pair = recorded('vf-enable.events');
    const vf = (i: number) =>
      `0000:87:${Math.floor(i / 8)
        .toString(16)
        .padStart(2, '0')}.${i % 8}`;
    const flood = Array.from({ length: 500 }, (_, i) =>
      pair
        .replaceAll('0000:86:00.3', vf(i))
        .replace('SEQNUM=6001', `SEQNUM=${7000 + 2 * i}`)
        .replace('SEQNUM=6002', `SEQNUM=${7001 + 2 * i}`),
    );
    // The kernel writes them as fast as the VFs appear: ten writes, back to back.
    for (let i = 0; i < 10; i++) t.kernelSays(flood.slice(i * 50, (i + 1) * 50).join(''));
    const bursts = await eventually(
      () => {
        const b = t.logged('hot-plug: kernel events; discovering now');
        return b.reduce((n, l) => n + (l.events as number), 0) === 1_000 ? b : undefined;
      },
      { what: 'all 1,000 events counted', timeoutMs: 15_000 },
    );
    expect(bursts.length).toBeLessThanOrEqual(3);
    await eventually(() => t.discoveries.n >= 2, { what: 'a discovery after the flood' });
    expect(t.discoveries.n - 1).toBeLessThanOrEqual(bursts.length);
    expect(bursts[0]!.devices).toHaveLength(8);

    // Still watching: the next card is seen as fast as ever.
    buildTree(t.root, GPU_HOST, ['vfio-pci']);
    t.kernelSays(recorded('v100-plug.events'));
    await eventually(() => t.names().includes(acc(V100)), { what: 'the V100 reported after the flood', timeoutMs: 10_000 });
  });

  it('skips malformed output without a discovery, and outlives a dead udevadm: one warning, back-off, a catch-up discovery when it returns', async () => {
    const t = (h = await hotplugHost());
    const first = await t.monitorRun(1);

    t.kernelSays(recorded('malformed.events'));
    await eventually(() => t.logged('hot-plug: udevadm printed lines that are not kernel events; skipped').length > 0, { what: 'the garbage noted' });
    await new Promise((r) => setTimeout(r, 500));
    expect(t.discoveries.n).toBe(1);

    // udevadm is killed, and cannot start again for a while (no uevent socket).
    writeFileSync(t.files.fail, 'Failed to create/bind netlink socket: Operation not permitted\n');
    process.kill(first, 'SIGKILL');
    await eventually(() => t.logged('hot-plug: udevadm failed again').length >= 3, { what: 'three failed restarts', timeoutMs: 10_000 });
    const warned = t.logged('hot-plug: no kernel events; the periodic scan finds changes until udevadm runs again');
    expect(warned).toHaveLength(1);
    expect(warned[0]!.reason).toBe(`${UDEVADM} exited (SIGKILL)`);
    const again = t.logged('hot-plug: udevadm failed again');
    expect(again[0]).toMatchObject({ reason: `${UDEVADM} exited (code 1): Failed to create/bind netlink socket: Operation not permitted`, failures: 2 });
    // Each retry waits twice as long as the one before: no busy loop.
    expect(again.map((l) => l.retryInMs)).toEqual([400, 800, 1_600, 1_600].slice(0, again.length));

    // A card is plugged in while nobody listens; its events are lost.
    buildTree(t.root, GPU_HOST, ['vfio-pci']);
    t.kernelSays(recorded('v100-plug.events'));
    rmSync(t.files.fail);
    await t.monitorRun(2);
    await eventually(() => t.names().includes(acc(V100)), { what: 'the V100 found by the catch-up discovery', timeoutMs: 10_000 });
    expect(t.logged('hot-plug: kernel events are back; discovering what the outage hid')).toHaveLength(1);
    expect(t.logged('hot-plug: kernel events; discovering now').at(-1)).toMatchObject({ catchUp: true, events: 0 });
  });

  it('falls back to the periodic scan when udevadm is not installed, saying so once', async () => {
    const t = (h = await hotplugHost({ command: ['/nonexistent/udevadm'], discoveryIntervalMs: 300 }));
    buildTree(t.root, GPU_HOST, ['vfio-pci']);
    await eventually(() => t.names().includes(acc(V100)), { what: 'the V100 found by the periodic scan', timeoutMs: 10_000 });
    await eventually(() => t.logged('hot-plug: udevadm failed again').length >= 2, { what: 'two retries' });
    const warned = t.logged('hot-plug: no kernel events; the periodic scan finds changes until udevadm runs again');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ reason: '/nonexistent/udevadm not found', retryInMs: 200 });
  });

  it('never reports a hot-plugged PCIe switch, nor the console display, even when the allow-list names their vendor', async () => {
    const allowList = JSON.stringify([{ vendor_id: '10de' }, { vendor_id: '1a03' }]);
    const t = (h = await hotplugHost({ allowList }));
    await t.monitorRun(1);
    // The ASPEED console (1a03, boot_vga = 1) is not reported though an entry names its vendor.
    expect(t.names()).toEqual([acc('0000:3b:00.0')]);

    buildTree(t.root, [...WITHOUT_V100, ...BEHIND_NF200], ['vfio-pci']);
    t.kernelSays(recorded('nf200-plug.events'));
    await eventually(() => t.names().includes(acc('0000:b2:00.0')), { what: 'the T4 behind the switch reported', timeoutMs: 10_000 });
    expect(t.names()).toEqual([acc('0000:3b:00.0'), acc('0000:b2:00.0')]);
    expect(t.logged('hot-plug: kernel events; discovering now')[0]).toMatchObject({ devices: ['0000:b1:00.0', '0000:b2:00.0'] });
  });
});

describe('hot-plug in cyborg.conf', () => {
  const config = (env: Record<string, string>) => loadConfig({ host: 'h' }, env, { role: 'agent' });
  const generic = [new GenericDriver({ host: 'h', sysfsRoot: '/nonexistent', hostOps: 'simulate' })];

  it('watches the subsystems of the enabled drivers through udevadm by default', () => {
    expect(hotplugFor(config({}), generic)).toEqual({ command: ['udevadm'], subsystems: ['pci', 'mdev'] });
    expect(hotplugFor(config({ CYBORG_UDEVADM_COMMAND: 'nsenter -t 1 -n udevadm' }), generic)?.command).toEqual(['nsenter', '-t', '1', '-n', 'udevadm']);
  });

  it("is off when the operator says so, or when no driver reads the kernel's devices", () => {
    expect(hotplugFor(config({ CYBORG_HOTPLUG: 'off' }), generic)).toBeUndefined();
    expect(hotplugFor(config({}), [new FakeDriver({ host: 'h' })])).toBeUndefined();
    expect(() => config({ CYBORG_HOTPLUG: 'netlink' })).toThrow(/CYBORG_HOTPLUG/);
  });
});
