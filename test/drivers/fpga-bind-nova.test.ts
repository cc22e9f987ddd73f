import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntelFpgaDriver } from '../../drivers/fpga/index.js';
import { GlanceClient, ImageStore } from '../../openstack/glance/index.js';
import { callJson, persona } from '../api-v2/harness.js';
import { buildHost, FPGA_VENDOR_HOST, NLB0_AFU } from '../fixtures/vendors/hosts.js';
import { deleteTree, readProvider, uniqueHost } from '../placement/harness.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { GlanceDouble } from '../support/glance.js';
import { startStack, type Stack } from '../support/stack.js';

const NLB3 = '5d1c7b0e-2a4f-4c8e-9b61-3e0f7a9d2c01';
const BROKEN = 'bad0c7b0-2a4f-4c8e-9b61-3e0f7a9d2c02';
const SERVER = '3f1e2d4c-5b6a-4978-8c9d-0e1f2a3b4c5d';
const OTHER_SERVER = '3f1e2d4c-5b6a-4978-8c9d-0e1f2a3b4c5e';

/**
 * Nova boots a server whose flavor asks for an Intel PAC running a Glance bitstream, through
 * Cyborg's v2 API as nova-conductor calls it, with Placement real (Debian's) and Glance a test
 * double of its API: the bind is answered 202, the ARQ is Bound only once the card runs the image,
 * and the provider Nova scheduled on carries the function trait of what it runs instead of the
 * one discovery saw. A bitstream the card refuses leaves the ARQ BindFailed with the tool's reason.
 */
describe.skipIf(!svc.placement)('Nova binds an FPGA ARQ that programs a Glance bitstream (v2 API, real Placement)', () => {
  const host = uniqueHost('fpga');
  let rt: Stack;
  let glance: GlanceDouble;
  const nova = { ...persona.member, 'x-service-roles': 'service' };
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, body?: unknown) =>
    callJson(rt.app, method, url, headers, body);

  beforeAll(async () => {
    glance = await new GlanceDouble([
      { id: NLB3, data: 'nlb3 bitstream', properties: { 'accel:function_id': 'nlb3' } },
      { id: BROKEN, data: 'a bitstream the card refuses', properties: { 'accel:function_id': 'broken' } },
    ]).start();
    const dir = mkdtempSync(join(tmpdir(), 'cyborg-fpga-nova-'));
    const tool = join(dir, 'program.sh');
    writeFileSync(tool, 'case "$1" in *bad*) echo "PR region busy" >&2; exit 1;; esac\necho done\n');
    const images = new ImageStore({
      client: new GlanceClient({ endpoint: async () => glance.url, timeoutMs: 10_000, retries: 0 }),
      dir: join(dir, 'images'),
      maxImageBytes: 1 << 20,
      timeoutMs: 10_000,
    });
    const root = buildHost(FPGA_VENDOR_HOST, 'fpga-nova');
    rt = await startStack({
      hosts: [host],
      agent: { images, telemetryIntervalMs: 0 },
      api: true,
      placement: { url: svc.placement!, createRoots: true },
      drivers: (h) => [new IntelFpgaDriver({ host: h, sysfsRoot: root, programCommand: ['sh', tool, '{image}'], stateDir: join(dir, 'state') })],
    });
    const pac = rt.conductor.listAccelerators({ host })[0]!;
    expect((await rt.conductor.act(pac.id, { type: 'ENABLE' })).state).toBe('ready');
  });
  afterAll(async () => {
    await rt?.stop();
    if (rt?.placement) await deleteTree(rt.placement, host);
    await glance?.stop();
  });

  const pac = () => rt.conductor.listAccelerators({ host })[0]!;
  const traits = async (): Promise<string[]> => (await readProvider(rt.placement, pac().rpUuid))?.traits ?? [];

  it('Placement first shows the function discovery saw on the card (the NLB0 AFU)', async () => {
    const want = `CUSTOM_FPGA_FUNCTION_ID_INTEL_${NLB0_AFU.toUpperCase()}`;
    expect(
      await eventually(async () => (await traits()).includes(want) && (await traits()).includes('CUSTOM_FPGA_INTEL_PAC_ARRIA10'), {
        what: 'the PAC provider with its traits',
        timeoutMs: 20_000,
      }),
    ).toBe(true);
  });

  let arq = '';
  const BIND_REQUEST = 'req-7d7a1c2e-5b1f-4f6e-9d0a-3c2b1a0f9e8d';
  it('the operator writes a profile naming the bitstream; nova-conductor creates and binds the ARQ', async () => {
    const dp = await call('POST', '/v2/device_profiles', persona.admin, [
      { name: 'pac-nlb3', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL_PAC_ARRIA10': 'required', 'accel:bitstream_id': NLB3 }] },
    ]);
    expect(dp.statusCode).toBe(201);
    const created = await call('POST', '/accelerator_requests', nova, { device_profile_name: 'pac-nlb3' });
    expect(created.statusCode).toBe(201);
    arq = created.json().arqs[0].uuid;
    const bind = await call(
      'PATCH',
      '/accelerator_requests',
      { ...nova, 'x-openstack-request-id': BIND_REQUEST },
      {
        [arq]: [
          { op: 'add', path: '/hostname', value: host },
          { op: 'add', path: '/device_rp_uuid', value: pac().rpUuid },
          { op: 'add', path: '/instance_uuid', value: SERVER },
        ],
      },
    );
    expect(bind.statusCode).toBe(202);
  });

  it("nova-compute finds the ARQ Bound with the PAC's handle, the card running the image", async () => {
    const bound = await eventually(
      async () => {
        const res = await call('GET', `/accelerator_requests?instance=${SERVER}&bind_state=resolved`, nova);
        return res.statusCode === 200 && res.json().arqs[0]?.state === 'Bound' ? res.json().arqs[0] : undefined;
      },
      { what: 'the ARQ resolved', timeoutMs: 15_000 },
    );
    expect(bound).toMatchObject({ uuid: arq, attach_handle_type: 'PCI', attach_handle_info: { bus: '5e', device: '00', function: '1' } });
    expect(pac()).toMatchObject({ state: 'attached', program: { bitstreamId: NLB3, functionId: 'nlb3' } });
    expect(glance.requests).toEqual([`GET /v2/images/${NLB3}`, `GET /v2/images/${NLB3}/file`]);
    // Glance was asked for the bind's request (Nova's PATCH), as OpenStack's global request id.
    expect(glance.requestIds).toEqual([BIND_REQUEST, BIND_REQUEST]);
  });

  it("Placement now says the card's function is the image's, and only that one", async () => {
    const want = 'CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3';
    await eventually(async () => (await traits()).includes(want), { what: 'the new function trait', timeoutMs: 20_000 });
    expect((await traits()).filter((t) => t.startsWith('CUSTOM_FPGA_FUNCTION_ID'))).toEqual([want]);
  });

  it("a bitstream the card refuses leaves the next server's ARQ BindFailed with the tool's reason, the card as it was", async () => {
    expect((await call('DELETE', `/accelerator_requests?instance=${SERVER}`, nova)).statusCode).toBe(204);
    await call('POST', '/v2/device_profiles', persona.admin, [{ name: 'pac-broken', groups: [{ 'resources:FPGA': '1', 'accel:function_id': 'broken' }] }]);
    const created = await call('POST', '/accelerator_requests', nova, { device_profile_name: 'pac-broken' });
    const other = created.json().arqs[0].uuid as string;
    const bind = await call('PATCH', '/accelerator_requests', nova, {
      [other]: [
        { op: 'add', path: '/hostname', value: host },
        { op: 'add', path: '/device_rp_uuid', value: pac().rpUuid },
        { op: 'add', path: '/instance_uuid', value: OTHER_SERVER },
      ],
    });
    expect(bind.statusCode).toBe(202);
    const failed = await eventually(
      async () => {
        const res = await call('GET', `/accelerator_requests/${other}`, nova);
        return res.json().state === 'BindFailed' ? res.json() : undefined;
      },
      { what: 'the ARQ failed', timeoutMs: 15_000 },
    );
    expect(failed).toMatchObject({ state: 'BindFailed', attach_handle_type: '' });
    expect(rt.conductor.getArq(other)?.error).toMatch(/PR region busy/);
    expect(pac()).toMatchObject({ state: 'programmed', program: { bitstreamId: NLB3 }, allocations: [] });
    expect((await traits()).filter((t) => t.startsWith('CUSTOM_FPGA_FUNCTION_ID'))).toEqual(['CUSTOM_FPGA_FUNCTION_ID_INTEL_NLB3']);
  });

  it("the operator's `openstack accelerator deployable program` with that image fails as Cyborg's does, the deployable keeping its bitstream", async () => {
    const dep = (await call('GET', '/v2/deployables', persona.admin)).json().deployables.find((d: { rp_uuid: string }) => d.rp_uuid === pac().rpUuid) as {
      uuid: string;
    };
    const res = await call('PATCH', `/v2/deployables/${dep.uuid}/program`, persona.admin, [
      { op: 'replace', path: '/program', value: [{ image_uuid: BROKEN }] },
    ]);
    expect(res.statusCode).toBeGreaterThanOrEqual(500);
    expect(res.body).toMatch(/PR region busy/);
    expect((await call('GET', `/v2/deployables/${dep.uuid}`, persona.admin)).json()).toMatchObject({ bitstream_id: NLB3 });
  });
});
