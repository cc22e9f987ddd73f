import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NvidiaGpuDriver, parseLgi, parseLgip, parseQueryXml } from '../../drivers/nvidia/index.js';

const capture = fileURLToPath(new URL('../fixtures/captures/h100-vm/', import.meta.url));
const vendors = fileURLToPath(new URL('../fixtures/vendors/', import.meta.url));
const FAKE_SMI = join(vendors, 'bin', 'fake-nvidia-smi.sh');
const smi = (name: string): string => readFileSync(join(capture, 'smi', name), 'utf8');

/** The captured function's sysfs directory as a tree: its attribute files, and `driver` as a link. */
function sysfsFromCapture(): string {
  const root = join(mkdtempSync(join(tmpdir(), 'cyborg-h100-vm-')), 'sys');
  const devices = join(capture, 'sysfs', 'bus', 'pci', 'devices');
  for (const address of readdirSync(devices)) {
    const dir = join(root, 'bus', 'pci', 'devices', address);
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(join(devices, address))) {
      if (f === 'listing.txt') continue;
      if (f.endsWith('.link')) symlinkSync(readFileSync(join(devices, address, f), 'utf8').trim(), join(dir, f.slice(0, -'.link'.length)));
      else copyFileSync(join(devices, address, f), join(dir, f));
    }
  }
  return root;
}

describe('the NVIDIA driver against a real H100 host (captured: test/fixtures/captures/h100-vm/)', () => {
  it('reads what nvidia-smi 580 really prints', () => {
    expect(parseQueryXml(smi('query.xml'))).toEqual([
      {
        index: 0,
        address: '0000:00:06.0',
        productName: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-239a4fd2-a53f-116c-5797-fcb494176850',
        migCurrent: 'Disabled',
        migPending: 'Disabled',
        migDevices: [],
      },
    ]);
    // With every GPU out of MIG mode, `mig -lgi` says so on stdout and exits 0: no instances.
    expect(parseLgi(smi('lgi.txt'))).toEqual([]);
    expect(parseLgip(smi('lgip.txt')).map((p) => `${p.name}:${p.id}:${p.free}/${p.total}:${p.memoryGiB}`)).toEqual([
      '1g.10gb:19:7/7:9.75',
      '1g.10gb+me:20:1/1:9.75',
      '1g.20gb:15:4/4:19.62',
      '2g.20gb:14:3/3:19.62',
      '3g.40gb:9:2/2:39.5',
      '4g.40gb:5:1/1:39.5',
      '7g.80gb:0:1/1:79.25',
    ]);
  });

  it('the hand-written H100 profile tables name each profile id as the real card does', () => {
    const real = parseLgip(smi('lgip.txt')).map((p) => `${p.id}:${p.name}:${p.total}`);
    const handH100 = parseLgip(readFileSync(join(vendors, 'nvidia-smi', 'h100', 'lgip.txt'), 'utf8')).filter((p) => p.gpu === 0);
    expect(handH100.map((p) => `${p.id}:${p.name}:${p.total}`)).toEqual(real);
    const mixed = parseLgip(readFileSync(join(vendors, 'nvidia-smi', 'a100-h100', 'lgip.txt'), 'utf8')).filter((p) => p.gpu === 1);
    expect(mixed.map((p) => `${p.id}:${p.name}:${p.total}`)).toEqual(real);
  });

  it('reports here what it reported on the machine: one pGPU, named and placed as Cyborg does', async () => {
    const driver = new NvidiaGpuDriver({
      host: 'vm',
      sysfsRoot: sysfsFromCapture(),
      nvidiaSmi: ['sh', FAKE_SMI, join(capture, 'smi')],
      stateDir: mkdtempSync(join(tmpdir(), 'cyborg-h100-state-')),
    });
    const { devices, unobserved } = await driver.discoverPartial();
    const onTheMachine = JSON.parse(readFileSync(join(capture, 'discovery.json'), 'utf8')) as { devices: unknown; unobserved: unknown[]; observed: unknown };
    // The capture predates identities (issue 39): the GPU now also says who it is, by nvidia-smi's UUID.
    expect(devices.map((d) => d.identity)).toEqual([{ serial: parseQueryXml(smi('query.xml'))[0]!.uuid, source: 'nvidia-smi uuid' }]);
    expect(devices.map(({ identity: _identity, ...d }) => d)).toEqual(onTheMachine.devices);
    expect(unobserved).toEqual(onTheMachine.unobserved);
    expect(await driver.observe(devices)).toEqual(onTheMachine.observed);
  });
});
