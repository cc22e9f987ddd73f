import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyborg, startCliTarget } from './harness.js';
import type { AcceleratorView, DriverView, ServiceView } from '../../model/index.js';

/**
 * An operator's session with the `cyborg` CLI against a running all-in-one: the generic-driver
 * spec's commands and the accelerator lifecycle, each checked by its output and exit code.
 */
describe('cyborg CLI against a running all-in-one', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  let url: string;
  const instance = randomUUID();
  const T4 = 'cli-host_0000_3b_00_0';
  const run = (...argv: string[]) => cyborg(...argv, '--url', url);
  // Every error ends naming the deployment it came from.
  const at = (u = url): string => `  deployment: ${u} (no sign-in)\n`;

  beforeAll(async () => {
    target = await startCliTarget();
    url = target.url;
  });
  afterAll(async () => {
    await target.running.stop();
  });

  it('driver-list shows each driver of the host, installed, as a table and as JSON', async () => {
    const table = await run('driver-list');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/│ DRIVER\s+│ HOST\s+│ VERSION │ STATE\s+│ ACCELERATORS │ IN USE │ AGENT\s+│ ID/);
    expect(table.stdout).toMatch(/│ generic │ cli-host │ 1\.0\.0\s+│ installed │ 4\s+│ 0\s+│ online │/);
    const json = await run('driver-list', '--json');
    const drivers = JSON.parse(json.stdout) as DriverView[];
    expect(drivers.map((d) => [d.name, d.state, d.accelerators])).toEqual([
      ['fake', 'installed', 7],
      ['generic', 'installed', 4],
    ]);
  });

  it('discover-services asks the agent, then service-list shows what was found', async () => {
    const before = await run('service-list');
    expect([before.code, before.stdout]).toEqual([0, 'No services recorded. Run "cyborg discover-services" first.\n']);
    const found = await run('discover-services');
    expect(found.code).toBe(0);
    expect(found.stdout).toContain('6 service(s) on 1 host(s)');
    expect(found.stdout).toMatch(
      /│ cli-host │ generic │ 0000:3b:00\.0 │ mdev_type\s+│ nvidia-223\s+│ 7\/8\s+│ parent=0000:3b:00\.0 name=GRID T4-2B device_api=vfio-pci/,
    );
    const listed = JSON.parse((await run('service-list', '--driver', 'generic', '--json')).stdout) as ServiceView[];
    expect(listed.map((s) => `${s.kind} ${s.name}`)).toEqual([
      'mdev_type nvidia-222',
      'mdev_type nvidia-223',
      'mdev_type nvidia-230',
      'vf 0000:86:00.1',
      'vf 0000:86:00.2',
      'passthrough 0000:af:00.0',
    ]);
  });

  it('accelerator list / show / enable take ids or names and say what changed', async () => {
    const list = await run('accelerator', 'list', '--type', 'gpu');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`│ ${T4}\\s+│ cli-host │ GPU\\s+│ PGPU\\s+│ inactive │ ok\\s+│ 0/1\\s+│\\s+│ ENABLE REMOVE`));
    const show = await run('accelerator', 'show', T4);
    expect(show.stdout).toMatch(/│ state\s+│ inactive/);
    expect(show.stdout).toMatch(/│ traits\s+│ OWNER_CYBORG CUSTOM_GPU_NVIDIA CUSTOM_GPU_PRODUCT_ID_1EB8/);
    const enabled = await run('accelerator', 'enable', T4);
    expect([enabled.code, enabled.stdout]).toEqual([0, `${T4}: inactive → ready\n`]);
    expect(target.ops.calls).toContainEqual({ op: 'bind', args: ['0000:3b:00.0', 'vfio-pci'] });
  });

  it('attach-instance binds an ARQ for the instance on a free accelerator of the resource class', async () => {
    const r = await run('attach-instance', instance, '--resource-class', 'pgpu', '--host', 'cli-host');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^instance ${instance} attached to ${T4} \\([0-9a-f-]{36}\\) on cli-host\\n  ARQ [0-9a-f-]{36}: Bound, attach handle [0-9a-f-]{36}\\n$`),
    );
    const arqs = target.running.conductor.listArqs({ instanceUuid: instance });
    expect(arqs.map((a) => [a.state, a.deviceProfileName])).toEqual([['Bound', 'operator:PGPU']]);
  });

  it('refuses uninstall-driver and update-driver while the instance holds the accelerator, with the reason and what to do (exit 4)', async () => {
    const r = await run('uninstall-driver', 'generic');
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        `^cyborg: driver generic on cli-host is in use: accelerator ${T4} \\([0-9a-f-]{36}\\) is attached to instance ${instance}\\. ` +
          `Detach it first \\(cyborg detach-instance ${instance}\\), then uninstall the driver \\[driver\\.in_use\\]\\n {2}deployment: `,
      ),
    );
    // --force passes the drain rule (test/maintenance); an attached instance still stops it.
    const u = await run('update-driver', 'generic', '--version', '2.0.0', '--force');
    expect(u.code).toBe(4);
    expect(u.stderr).toContain('then update the driver [driver.in_use]');
    expect(target.ops.calls.map((c) => c.op)).not.toContain('driver-uninstall');
  });

  it('names an unknown driver as such, listing the known ones (exit 3)', async () => {
    const r = await run('install-driver', 'nvidia');
    expect([r.code, r.stderr]).toEqual([
      3,
      'cyborg: no driver "nvidia". Known drivers: fake@cli-host, generic@cli-host (see: cyborg driver-list) [driver.not_found]\n' + at(),
    ]);
  });

  it('detach-instance unbinds and deletes the ARQ; detaching again is not an error', async () => {
    const r = await run('detach-instance', instance);
    expect([r.code, r.stdout]).toEqual([0, `instance ${instance} detached from ${T4} (now ready); 1 ARQ(s) deleted\n`]);
    const again = await run('detach-instance', instance);
    expect([again.code, again.stdout]).toEqual([0, `instance ${instance} holds no accelerator: nothing to detach\n`]);
  });

  it('uninstall-driver, install-driver and update-driver change the driver on the host', async () => {
    const un = await run('uninstall-driver', 'generic');
    expect([un.code, un.stdout]).toEqual([0, "driver generic@cli-host uninstalled; its accelerators are gone from the host's inventory\n"]);
    const gone = JSON.parse((await run('accelerator', 'list', '--json', '--driver', 'generic')).stdout) as AcceleratorView[];
    expect(gone.map((a) => a.state)).toEqual(['removed', 'removed', 'removed', 'removed']);

    const inst = await run('install-driver', 'generic', '--version', '1.1.0');
    expect([inst.code, inst.stdout]).toEqual([0, 'driver generic@cli-host installed, version 1.1.0, 4 accelerator(s)\n']);
    const up = await run('update-driver', 'generic@cli-host', '--version', '1.2.0', '--json', '--force');
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({ name: 'generic', host: 'cli-host', state: 'installed', version: '1.2.0', lastError: null });
    expect(target.ops.calls.filter((c) => c.op.startsWith('driver-')).map((c) => `${c.op} ${c.args.join(' ')}`)).toEqual([
      'driver-uninstall 1.0.0',
      'driver-install 1.1.0',
      'driver-update 1.2.0',
    ]);
  });

  it('reports a driver that fails on the host with its reason (exit 5), and records it', async () => {
    const lifecycle = target.ops.lifecycle.bind(target.ops);
    target.ops.lifecycle = async () => {
      throw new Error('dkms: build of vfio-helper 9.9 failed');
    };
    try {
      const r = await run('update-driver', 'generic', '--version', '9.9', '--force');
      expect([r.code, r.stderr]).toEqual([
        5,
        'cyborg: update of driver generic on cli-host failed: dkms: build of vfio-helper 9.9 failed [driver.failed]\n' + at(),
      ]);
      const d = JSON.parse((await run('driver-list', '--json')).stdout) as DriverView[];
      expect(d.find((x) => x.name === 'generic')).toMatchObject({
        version: '1.2.0',
        state: 'installed',
        lastError: { op: 'update', reason: 'dkms: build of vfio-helper 9.9 failed' },
      });
    } finally {
      target.ops.lifecycle = lifecycle;
    }
  });

  it('drives an accelerator through program, attach, detach, disable and remove', async () => {
    const fpga = 'cli-host_FakeDevice';
    expect((await run('accelerator', 'enable', fpga)).stdout).toBe(`${fpga}: inactive → ready\n`);
    expect((await run('accelerator', 'program', fpga, '--function', 'gzip')).stdout).toBe(`${fpga}: ready → programmed\n`);
    const vm = randomUUID();
    expect((await run('accelerator', 'attach', fpga, '--instance', vm)).stdout).toBe(`${fpga}: programmed → attached\n`);
    const refused = await run('accelerator', 'disable', fpga);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('  state: attached; allowed now: ATTACH, DETACH\n');
    expect((await run('accelerator', 'detach', fpga, '--instance', vm)).stdout).toBe(`${fpga}: attached → programmed\n`);
    expect((await run('accelerator', 'disable', fpga)).stdout).toBe(`${fpga}: programmed → inactive\n`);
    expect((await run('accelerator', 'remove', fpga)).stdout).toBe(`${fpga}: inactive → removed\n`);
    const retry = await run('accelerator', 'retry', fpga);
    expect(retry.code).toBe(4);
  });

  it('says what is wrong with the command line (exit 2) and with an unknown accelerator (exit 3)', async () => {
    expect((await run('accelerator', 'program', 'cli-host_0000_af_00_0')).code).toBe(2);
    const both = await run('accelerator', 'program', 'cli-host_0000_af_00_0', '--bitstream', 'bs-1', '--function', 'gzip');
    expect([both.code, both.stderr]).toEqual([2, 'cyborg: give --bitstream <id> or --function <id>, not both: a programming loads one image\n' + at()]);
    const noTarget = await run('attach-instance', randomUUID());
    expect([noTarget.code, noTarget.stderr]).toEqual([
      2,
      'cyborg: say which accelerator: --accelerator <id>, --resource-class <rc> or --device-profile <name> (see: cyborg accelerator list)\n' + at(),
    ]);
    const badId = await run('detach-instance', 'web-1');
    expect([badId.code, badId.stderr]).toEqual([2, 'cyborg: instance ids are UUIDs (as "openstack server list" shows them), got "web-1"\n' + at()]);
    expect((await cyborg('driver-list', '--frobnicate')).code).toBe(2);
    expect((await cyborg('install-driver')).code).toBe(2);
    const unknown = await run('accelerator', 'show', 'no-such-accelerator');
    expect([unknown.code, unknown.stderr]).toEqual([
      3,
      'cyborg: no accelerator named no-such-accelerator (see: cyborg accelerator list) [accelerator.not_found]\n' + at(),
    ]);
    const none = await run('attach-instance', randomUUID(), '--resource-class', 'FPGA', '--trait', 'CUSTOM_NOPE');
    expect(none.code).toBe(4);
    expect(none.stderr).toContain('no accelerator of FPGA with CUSTOM_NOPE can take an instance now (none found) [accelerator.none_available]');
  });

  it('says how to reach an API that is not there (exit 6)', async () => {
    const port = await closedPort();
    const r = await cyborg('driver-list', '--url', `http://127.0.0.1:${port}`);
    expect(r.code).toBe(6);
    expect(r.stderr).toBe(
      `cyborg: cannot reach the Cyborg API at http://127.0.0.1:${port}: ECONNREFUSED\n  Is it running? Start one with "cyborg all-in-one", or point --url / CYBORG_URL at it.\n${at(`http://127.0.0.1:${port}`)}`,
    );
  });
});

/** A port nothing listens on: one the kernel just handed out and took back. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
