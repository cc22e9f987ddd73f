import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { IntelFpgaDriver, XilinxFpgaDriver } from '../../drivers/fpga/index.js';
import type { Progress } from '../../drivers/abilities.js';
import { buildHost, FPGA_VENDOR_HOST, NLB0_AFU, PAC_FME_INTERFACE } from '../fixtures/vendors/hosts.js';
import type { DeployableT } from '../../model/index.js';

const attrs = (d: DeployableT): string[] => d.attributes.map((a) => `${a.key}=${a.value}`);
const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** A programming tool that logs what it programs and fails for images whose name contains "bad". */
function fakeTool(dir: string): string[] {
  const script = join(dir, 'program.sh');
  writeFileSync(
    script,
    'echo "$1" >> "$(dirname "$0")/programmed.log"\necho "Programming $1: 50%"\ncase "$1" in *bad*) echo "flash write failed" >&2; exit 1;; *hang*) sleep 30;; esac\necho "done"\n',
  );
  return ['sh', script, '{image}', '{address}'];
}

function image(dir: string, name: string): string {
  const p = join(dir, name);
  writeFileSync(p, `bitstream ${name}`);
  return p;
}

describe('FPGA drivers on a PAC Arria 10 and a U250', () => {
  let root: string;
  beforeAll(() => {
    root = buildHost(FPGA_VENDOR_HOST, 'fpga');
  });

  it("reports the PAC as Cyborg's Intel driver: traits from the OPAE nodes, the VF as the accelerator", async () => {
    const [pac] = await new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root }).discover();
    expect(pac!.vendor).toBe('0x8086');
    expect(pac!.controlPath.info).toBe('{"bus": "5e", "device": "00", "domain": "0000", "function": "0"}');
    const dep = pac!.deployables[0]!;
    expect(dep.name).toBe('compute1_0000:5e:00.1');
    expect(dep.driverName).toBe('intel');
    expect(attrs(dep)).toEqual([
      'rc=FPGA',
      'trait0=CUSTOM_FPGA_INTEL',
      'trait1=CUSTOM_FPGA_INTEL_PAC_ARRIA10',
      `trait2=CUSTOM_FPGA_FUNCTION_ID_INTEL_${NLB0_AFU.toUpperCase()}`,
      `trait3=CUSTOM_FPGA_REGION_INTEL_${PAC_FME_INTERFACE.toUpperCase()}`,
    ]);
    expect(dep.attachHandles.map((h) => h.attachInfo)).toEqual(['{"bus": "5e", "device": "00", "domain": "0000", "function": "1"}']);
  });

  it("reports the U250 as Cyborg's Xilinx driver: one card, a handle per PF", async () => {
    const [u250] = await new XilinxFpgaDriver({ host: 'compute1', sysfsRoot: root }).discover();
    const dep = u250!.deployables[0]!;
    expect([dep.name, dep.driverName, dep.numAccelerators]).toEqual(['compute1_0000:3b:00.0', 'XILINX', 1]);
    expect(attrs(dep)).toEqual(['rc=FPGA', 'trait0=CUSTOM_FPGA_XILINX', 'trait1=CUSTOM_FPGA_PRODUCT_ID_5004']);
    expect(dep.attachHandles).toHaveLength(2);
  });

  it('programs a verified image with progress, then reports its function trait', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    const driver = new XilinxFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir });
    const [u250] = await driver.discover();
    const img = image(dir, 'gzip.xclbin');
    const progress: Progress[] = [];
    const done = await driver.program(
      { key: 'p1', deployable: u250!.deployables[0]!, params: { imagePath: img, sha256: sha256(img), functionId: 'gzip' } },
      { onProgress: (p) => progress.push(p) },
    );
    expect(done).toEqual({ address: '0000:3b:00.0', bitstreamId: null, functionId: 'gzip' });
    expect(progress.map((p) => p.phase)).toEqual(['verify', 'program', 'program', 'program', 'done']);
    expect(progress[2]!.message).toBe(`Programming ${img}: 50%`);
    const [again] = await driver.discover();
    expect(attrs(again!.deployables[0]!)).toContain('trait2=CUSTOM_FPGA_FUNCTION_ID_XILINX_GZIP');
  });

  it('programs nothing when the checksum does not match', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    const driver = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir });
    const [pac] = await driver.discover();
    const img = image(dir, 'nlb.gbs');
    await expect(driver.program({ key: 'p', deployable: pac!.deployables[0]!, params: { imagePath: img, md5: '0'.repeat(32) } })).rejects.toMatchObject({
      code: 'driver.failed',
      details: { reason: 'checksum_mismatch' },
    });
    await expect(driver.program({ key: 'p', deployable: pac!.deployables[0]!, params: { imagePath: img } })).rejects.toMatchObject({
      details: { reason: 'checksum_missing' },
    });
    expect(() => readFileSync(join(dir, 'programmed.log'))).toThrow();
  });

  it('rolls back to the previous image when programming fails, and says so when that fails too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    const driver = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir });
    const dep = (await driver.discover())[0]!.deployables[0]!;
    const good = image(dir, 'good.gbs');
    await driver.program({ key: '1', deployable: dep, params: { imagePath: good, sha256: sha256(good) } });
    const bad = image(dir, 'bad.gbs');
    await expect(driver.program({ key: '2', deployable: dep, params: { imagePath: bad, sha256: sha256(bad) } })).rejects.toMatchObject({
      details: { reason: 'program_failed', rolledBack: true },
    });
    expect(readFileSync(join(dir, 'programmed.log'), 'utf8').trim().split('\n')).toEqual([good, bad, good]);

    const other = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    writeFileSync(join(other, 'intel-fpga-programmed.json'), JSON.stringify({ '0000:5e:00.0': { image: join(other, 'bad-previous.gbs') } }));
    const broken = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(other), stateDir: other });
    const err = await broken.program({ key: '3', deployable: dep, params: { imagePath: bad, sha256: sha256(bad) } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'driver.failed', details: { reason: 'rollback_failed' } });
    expect((err as Error).message).toMatch(/flash write failed.*restoring .*bad-previous.gbs failed too/);
  });

  it('resets a card by reloading the image it is recorded to run, and says so when it has none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    const driver = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir });
    const dep = (await driver.discover())[0]!.deployables[0]!;
    await expect(driver.reset({ key: 'r0', deployable: dep, params: {} })).rejects.toMatchObject({
      code: 'driver.failed',
      details: { reason: 'nothing_to_reload' },
    });
    const good = image(dir, 'good.gbs');
    await driver.program({ key: '1', deployable: dep, params: { imagePath: good, sha256: sha256(good), bitstreamId: 'bs-good' } });
    // A driver started afresh (the agent restarted) reloads what the state file says the card runs.
    const again = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir });
    expect(await again.reset({ key: 'r1', deployable: dep, params: {} })).toEqual({
      address: '0000:5e:00.0',
      image: good,
      bitstreamId: 'bs-good',
      functionId: null,
    });
    expect(readFileSync(join(dir, 'programmed.log'), 'utf8').trim().split('\n')).toEqual([good, good]);
  });

  it('refuses a second programming of the same card while one runs, and kills one that hangs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-'));
    const driver = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: fakeTool(dir), stateDir: dir, programTimeoutMs: 500 });
    const dep = (await driver.discover())[0]!.deployables[0]!;
    const slow = image(dir, 'hang.gbs');
    const first = driver.program({ key: '1', deployable: dep, params: { imagePath: slow, sha256: sha256(slow) } });
    await expect(driver.program({ key: '2', deployable: dep, params: { imagePath: slow, sha256: sha256(slow) } })).rejects.toMatchObject({
      code: 'driver.busy',
    });
    await expect(first).rejects.toMatchObject({ code: 'driver.timeout', details: { reason: 'program_failed', rolledBack: false } });
    const missing = new IntelFpgaDriver({ host: 'compute1', sysfsRoot: root, programCommand: ['/nonexistent/fpgaconf', '{image}'], stateDir: dir });
    await missing.discover();
    await expect(missing.program({ key: '3', deployable: dep, params: { imagePath: slow, sha256: sha256(slow) } })).rejects.toMatchObject({
      code: 'driver.failed',
      message: expect.stringContaining('cannot run /nonexistent/fpgaconf'),
    });
  });
});
