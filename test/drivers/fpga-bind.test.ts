import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntelFpgaDriver, XilinxFpgaDriver } from '../../drivers/fpga/index.js';
import { GlanceClient, ImageStore } from '../../openstack/glance/index.js';
import { buildHost, FPGA_VENDOR_HOST } from '../fixtures/vendors/hosts.js';
import { GlanceDouble } from '../support/glance.js';
import { startStack, type Stack } from '../support/stack.js';

const NLB3 = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e01';
const CORRUPT = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e02';
const FAILING = 'bad00000-3f0b-4a55-9d1e-0c2b6a1f7e03';
const GZIP = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e04';
const OLD_MD5 = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e05';
const HUGE = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e06';
const TWIN_A = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e07';
const TWIN_B = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e08';
const QUEUED = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e09';
const MISSING = '8a6e4c1e-3f0b-4a55-9d1e-0c2b6a1f7e0a';

/**
 * Nova binds ARQs whose device profile names a bitstream (`accel:bitstream_id`, a Glance image)
 * or a function (`accel:function_id`) on a host with an Intel PAC Arria 10 and a Xilinx U250, as
 * with Cyborg: the agent finds and downloads the image from Glance (a test double of its API v2:
 * no Glance runs here), the driver verifies Glance's checksum and programs the card with the
 * configured tool (a script), and only then is the ARQ Bound. Whatever goes wrong — a corrupt
 * image, a tool that fails, an ambiguous function, Glance away — leaves the ARQ BindFailed with
 * the reason and the card on its previous image, in service.
 */
describe('FPGA programming on bind (intel_fpga_driver, xilinx_fpga_driver, Glance)', () => {
  let rt: Stack;
  let glance: GlanceDouble;
  let dir: string;
  let n = 0;

  beforeAll(async () => {
    glance = await new GlanceDouble([
      { id: NLB3, data: 'nlb3 green bitstream' },
      { id: CORRUPT, data: 'nlb0 bitstream, damaged in upload', claimedHash: '0'.repeat(128) },
      { id: FAILING, data: 'a bitstream the card refuses' },
      { id: GZIP, data: 'gzip xclbin for the U250', properties: { 'accel:function_id': 'gzip' } },
      // Uploaded before Glance had multihash: md5 `checksum` only.
      { id: OLD_MD5, data: 'an old dma bitstream', hashAlgo: null },
      { id: HUGE, data: 'x'.repeat(4096) },
      { id: TWIN_A, data: 'aes v1', properties: { 'accel:function_id': 'aes' } },
      { id: TWIN_B, data: 'aes v2', properties: { 'accel:function_id': 'aes' } },
      { id: QUEUED, data: 'not uploaded yet', status: 'queued' },
    ]).start();
    dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-bind-'));
    const tool = join(dir, 'program.sh');
    // Logs what it programs and says how far it got; refuses images whose file name says "bad".
    writeFileSync(
      tool,
      'echo "$1" >> "$(dirname "$0")/programmed.log"\necho "Programming $1: 50%"\ncase "$1" in *bad*) echo "flash write failed" >&2; exit 1;; esac\necho done\n',
    );
    const root = buildHost(FPGA_VENDOR_HOST, 'fpga-bind');
    const client = new GlanceClient({ endpoint: async () => glance.url, timeoutMs: 10_000, retries: 2 });
    const images = new ImageStore({ client, dir: join(dir, 'images'), maxImageBytes: 1024, timeoutMs: 10_000 });
    const program = { programCommand: ['sh', tool, '{image}'], stateDir: join(dir, 'state') };
    rt = await startStack({
      hosts: ['compute1'],
      agent: { images, telemetryIntervalMs: 0 },
      drivers: (host) => [new IntelFpgaDriver({ host, sysfsRoot: root, ...program }), new XilinxFpgaDriver({ host, sysfsRoot: root, ...program })],
    });
    for (const a of rt.conductor.listAccelerators({ host: 'compute1' })) expect((await rt.conductor.act(a.id, { type: 'ENABLE' })).state).toBe('ready');
  });
  afterAll(async () => {
    await rt?.stop();
    await glance?.stop();
  });

  const programmed = (): string[] => (existsSync(join(dir, 'programmed.log')) ? readFileSync(join(dir, 'programmed.log'), 'utf8').trim().split('\n') : []);
  const imageFile = (id: string): string => join(dir, 'images', `${id}.bit`);
  const card = (driver: 'intel' | 'XILINX') => rt.conductor.listAccelerators({ host: 'compute1' }).find((a) => a.driver === driver)!;

  /** The operator's device profile with these `accel:` keys, then Nova's create and bind of one ARQ on `driver`'s card. */
  const bind = async (accel: Record<string, string>, driver: 'intel' | 'XILINX' = 'intel') => {
    const c = rt.conductor;
    const name = `fpga-dp-${++n}`;
    await c.documents.createProfile({
      uuid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      name,
      description: null,
      groups: [{ 'resources:FPGA': '1', ...accel }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const arq = await c.createArq({ deviceProfileName: name, deviceProfileGroupId: 0, projectId: 'p1' });
    const bound = await c.bindArq(arq.uuid, { hostname: 'compute1', deviceRpUuid: card(driver).rpUuid, instanceUuid: `vm-${n}` });
    return { arq: bound, card: c.getAccelerator(card(driver).id) };
  };
  const release = async (uuid: string): Promise<void> => {
    expect((await rt.conductor.deleteArq(uuid)).state).toBe('Deleted');
  };

  it('fetches the bitstream from Glance, verifies its sha512, programs it, and only then is the ARQ Bound', async () => {
    const { arq, card: pac } = await bind({ 'accel:bitstream_id': NLB3 });
    expect(arq).toMatchObject({ state: 'Bound', error: null });
    expect(pac).toMatchObject({ state: 'attached', program: { bitstreamId: NLB3 } });
    expect(programmed()).toEqual([imageFile(NLB3)]);
    expect(glance.requests).toEqual([`GET /v2/images/${NLB3}`, `GET /v2/images/${NLB3}/file`]);
    // Programmed before the attach, the attach before Bound: the accelerator's history says so.
    const history = await rt.conductor.history(pac.id);
    expect(history.map((h) => h.to).slice(-4)).toEqual(['programming', 'programmed', 'attaching', 'attached']);
    // The conductor holding the host logged each step the agent reported.
    const steps = rt.lines.filter((l) => l.msg === 'programming progress' && l.acceleratorId === pac.id).map((l) => l.phase);
    expect(steps).toEqual(expect.arrayContaining(['fetch', 'verify', 'program', 'done']));
    await release(arq.uuid);
  });

  it('does not program the card again for an ARQ asking for the image it runs', async () => {
    const before = glance.requests.length;
    const { arq } = await bind({ 'accel:bitstream_id': NLB3 });
    expect(arq.state).toBe('Bound');
    expect(programmed()).toHaveLength(1);
    expect(glance.requests).toHaveLength(before);
    await release(arq.uuid);
  });

  it("leaves the ARQ BindFailed, and the card untouched, when the image does not match Glance's checksum", async () => {
    const { arq, card: pac } = await bind({ 'accel:bitstream_id': CORRUPT });
    expect(arq.state).toBe('BindFailed');
    expect(arq.error).toMatch(/sha512 is [0-9a-f]{128}, expected 0{128}; nothing was programmed/);
    expect(programmed()).toHaveLength(1);
    // The card never left its image: it stays in service, the failure recorded on it.
    expect(pac).toMatchObject({ state: 'programmed', allocations: [], program: { bitstreamId: NLB3 }, error: { op: 'program' } });
    await release(arq.uuid);
  });

  it("leaves the ARQ BindFailed with the tool's reason when programming fails, the card rolled back to its image", async () => {
    const before = programmed().length;
    const { arq, card: pac } = await bind({ 'accel:bitstream_id': FAILING });
    expect(arq.state).toBe('BindFailed');
    expect(arq.error).toMatch(/flash write failed/);
    expect(arq.error).toMatch(/previous image .* restored/);
    expect(pac).toMatchObject({ state: 'programmed', program: { bitstreamId: NLB3 }, allocations: [] });
    // The failing image, then the previous one programmed again.
    expect(programmed().slice(before)).toEqual([imageFile(FAILING), imageFile(NLB3)]);
    await release(arq.uuid);
  });

  it('keeps in the download dir only the images the cards run', () => {
    expect(readdirSync(join(dir, 'images'))).toEqual([`${NLB3}.bit`]);
  });

  it('finds the image of an accel:function_id in Glance by that property alone, as Cyborg does, and programs the U250', async () => {
    const { arq, card: u250 } = await bind({ 'accel:function_id': 'gzip' }, 'XILINX');
    expect(arq.state).toBe('Bound');
    expect(u250.program).toMatchObject({ bitstreamId: GZIP, functionId: 'gzip' });
    expect(glance.requests).toContain('GET /v2/images?accel%3Afunction_id=gzip');
    expect(programmed().at(-1)).toBe(imageFile(GZIP));
    await release(arq.uuid);
  });

  it("resets a free U250 on the operator's word by reloading the image it runs, and keeps it in service with it", async () => {
    const u250 = card('XILINX');
    expect(u250).toMatchObject({ state: 'programmed', allocations: [], program: { functionId: 'gzip' } });
    const before = programmed().length;
    const reset = await rt.conductor.act(u250.id, { type: 'RESET' });
    expect(reset).toMatchObject({ state: 'programmed', program: { bitstreamId: GZIP, functionId: 'gzip' }, error: null });
    expect(programmed().slice(before)).toEqual([imageFile(GZIP)]);
  });

  it('refuses a function two images provide (Cyborg wants exactly one)', async () => {
    const { arq, card: u250 } = await bind({ 'accel:function_id': 'aes' }, 'XILINX');
    expect(arq.state).toBe('BindFailed');
    expect(arq.error).toMatch(/Glance has 2 images with accel:function_id aes/);
    expect(u250).toMatchObject({ state: 'programmed', program: { functionId: 'gzip' } });
    await release(arq.uuid);
  });

  it('refuses a profile group that sets both a bitstream and a function, before anything is fetched', async () => {
    const before = glance.requests.length;
    const { arq } = await bind({ 'accel:bitstream_id': NLB3, 'accel:function_id': 'gzip' });
    expect(arq.state).toBe('BindFailed');
    expect(arq.error).toMatch(/both accel:bitstream_id .* and accel:function_id .*only one may be set/);
    expect(glance.requests).toHaveLength(before);
    await release(arq.uuid);
  });

  it("verifies an image older than Glance's multihash by its md5 checksum", async () => {
    const { arq, card: pac } = await bind({ 'accel:bitstream_id': OLD_MD5 });
    expect(arq.state).toBe('Bound');
    expect(pac.program).toMatchObject({ bitstreamId: OLD_MD5 });
    await release(arq.uuid);
  });

  it('rides out a Glance answering 503 for a moment (retried), and says why when it cannot', async () => {
    glance.unavailable = 2;
    const { arq } = await bind({ 'accel:bitstream_id': NLB3 });
    expect(arq.state).toBe('Bound');
    await release(arq.uuid);

    const cases: [Record<string, string>, RegExp][] = [
      [{ 'accel:bitstream_id': HUGE }, /is 4096 bytes, above \[glance\] max_image_bytes 1024/],
      [{ 'accel:bitstream_id': QUEUED }, /is queued in Glance, not active/],
      [{ 'accel:bitstream_id': MISSING }, /Glance has no image .* \(404\)/],
      [{ 'accel:bitstream_id': '../../etc/passwd' }, /is not a Glance image id/],
      [{ 'accel:function_id': 'sha3' }, /Glance has no image with accel:function_id sha3/],
    ];
    for (const [accel, why] of cases) {
      const { arq: failed, card: pac } = await bind(accel);
      expect(failed.state).toBe('BindFailed');
      expect(failed.error).toMatch(why);
      expect(pac).toMatchObject({ state: 'programmed', program: { bitstreamId: NLB3 }, allocations: [] });
      await release(failed.uuid);
    }
    glance.unavailable = 10;
    const { arq: away } = await bind({ 'accel:bitstream_id': GZIP });
    expect(away.state).toBe('BindFailed');
    expect(away.error).toMatch(/Glance answered 503/);
    glance.unavailable = 0;
    await release(away.uuid);
  });
});

/**
 * A programming that outlasts the conductor's deadline (`[conductor] program_timeout`): the bind
 * fails with the reason and the card is taken out of service (`error`), since nobody can say what
 * it runs — never Bound on a card that may be half-programmed.
 */
describe('FPGA programming on bind past its deadline', () => {
  let rt: Stack;
  let glance: GlanceDouble;

  beforeAll(async () => {
    glance = await new GlanceDouble([{ id: NLB3, data: 'a bitstream that takes long to write' }]).start();
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-slow-'));
    const tool = join(dir, 'program.sh');
    writeFileSync(tool, 'sleep 2\necho done\n');
    const images = new ImageStore({
      client: new GlanceClient({ endpoint: async () => glance.url, timeoutMs: 5_000, retries: 0 }),
      dir: join(dir, 'images'),
      maxImageBytes: 1024,
      timeoutMs: 5_000,
    });
    rt = await startStack({
      hosts: ['compute1'],
      agent: { images, telemetryIntervalMs: 0 },
      timing: { programTimeoutMs: 500 },
      drivers: (host) => [
        new IntelFpgaDriver({
          host,
          sysfsRoot: buildHost(FPGA_VENDOR_HOST, 'fpga-slow'),
          programCommand: ['sh', tool, '{image}'],
          stateDir: join(dir, 'state'),
        }),
      ],
    });
  });
  afterAll(async () => {
    await rt?.stop();
    await glance?.stop();
  });

  it('fails the bind with the deadline as the reason and leaves the card in error, not attached', async () => {
    const c = rt.conductor;
    const pac = c.listAccelerators({ host: 'compute1' })[0]!;
    await c.act(pac.id, { type: 'ENABLE' });
    await c.documents.createProfile({
      uuid: '00000000-0000-4000-8000-0000000000ff',
      name: 'slow',
      description: null,
      groups: [{ 'resources:FPGA': '1', 'accel:bitstream_id': NLB3 }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const arq = await c.createArq({ deviceProfileName: 'slow', deviceProfileGroupId: 0, projectId: 'p1' });
    const started = Date.now();
    const bound = await c.bindArq(arq.uuid, { hostname: 'compute1', deviceRpUuid: pac.rpUuid, instanceUuid: 'vm-slow' });
    expect(Date.now() - started).toBeLessThan(1_900);
    expect(bound.state).toBe('BindFailed');
    expect(bound.error).toMatch(/did not answer program in time|program timed out/);
    expect(c.getAccelerator(pac.id)).toMatchObject({ state: 'error', allocations: [], error: { op: 'program' } });
  });
});
