import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { allInSync, allocate, enableInPlacement, reservedBecomes, startSynced, stopAndTidy, type Synced } from '../placement/harness.js';
import { eventually } from '../support/eventually.js';

/**
 * Cyborg's `disable` takes a device out of service: an operator disables the fake FPGA while an
 * instance runs on it, Placement reserves the rest of its inventory, a bind made with the real
 * `openstack accelerator` CLI fails with a reason that names the disable and the way out, the
 * instance keeps its handle, and `enable` undoes it all. (Debian's python3-cyborgclient 2.0.0
 * has no `device disable` command and prints no status: the disable, the enable and the status are
 * the v2 API's own calls, as newer clients make them; profile, ARQ and bind go through the CLI.)
 */
const run = promisify(execFile);
const cliReady = spawnSync('openstack', ['accelerator', 'device', 'list', '--help'], { stdio: 'ignore' }).status === 0;
const required = process.env.CI === 'true';

describe.skipIf(!svc.placement || (!cliReady && !required))('v2 device disable with the real openstack CLI and a real Placement', () => {
  let s: Synced;
  let endpoint = '';
  const openstack = async (...args: string[]): Promise<string> =>
    (
      await run('openstack', ['--os-auth-type', 'none', '--os-endpoint', endpoint, '--os-accelerator-api-version', '2.1', 'accelerator', ...args], {
        timeout: 60_000,
      })
    ).stdout;
  const v2 = (method: 'POST', path: string) =>
    s.app.inject({ method, url: `/v2${path}`, headers: { 'openstack-api-version': 'accelerator 2.3' }, payload: {} });
  /** The device's status at microversion 2.3 (the 2.0.0 client's `device show` does not print it). */
  const statusOf = async (uuid: string): Promise<string> =>
    (await s.app.inject({ method: 'GET', url: `/v2/devices/${uuid}`, headers: { 'openstack-api-version': 'accelerator 2.3' } })).json().status;

  beforeAll(async () => {
    s = await startSynced({ url: svc.placement!, api: true, createRoots: true, fake: { gpus: 0, nics: 0 } });
    await allInSync(s);
    await s.app.listen({ host: '127.0.0.1', port: 0 });
    endpoint = `http://127.0.0.1:${(s.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await stopAndTidy(s);
  });

  async function bindWithCli(profile: string, rpUuid: string): Promise<string> {
    const arq = JSON.parse(await openstack('arq', 'create', profile, '-f', 'json')) as { uuid: string }[] | { uuid: string };
    const uuid = Array.isArray(arq) ? arq[0]!.uuid : arq.uuid;
    await openstack('arq', 'bind', uuid, s.host, randomUUID(), rpUuid, randomUUID());
    await eventually(() => ['Bound', 'BindFailed'].includes(s.conductor.getArq(uuid).state), { what: `ARQ ${uuid} resolved` });
    return uuid;
  }

  it('reserves the device in Placement, fails a bind naming the disable, keeps the instance on it, and enable undoes it', async () => {
    const fpga = s.accelerator('FakeDevice');
    await enableInPlacement(s, fpga);
    // The instance Nova allocated for is the one attached: Placement's allocation is its use (another uuid would be a second one).
    const running = await allocate(s.client, fpga.rpUuid, 'FPGA', 1);
    await s.conductor.attach(fpga.id, { instanceUuid: running });
    await openstack('device', 'profile', 'create', 'disable-profile', '[{"resources:FPGA": "1", "trait:CUSTOM_FAKE_DEVICE": "required"}]');

    expect((await v2('POST', `/devices/${fpga.deviceUuid}/disable`)).statusCode).toBe(200);
    await reservedBecomes(s, fpga.rpUuid, 'FPGA', 15, 'all but the allocated slot reserved');
    expect(await statusOf(fpga.deviceUuid)).toBe('maintaining');
    expect(JSON.parse(await openstack('device', 'show', fpga.deviceUuid, '-f', 'json'))).toMatchObject({ uuid: fpga.deviceUuid, hostname: s.host });
    expect(s.conductor.getAccelerator(fpga.id)).toMatchObject({ state: 'attached', allocations: [expect.objectContaining({ instanceUuid: running })] });

    const refused = await bindWithCli('disable-profile', fpga.rpUuid);
    const arq = s.conductor.getArq(refused);
    expect(arq.state).toBe('BindFailed');
    expect(arq.error).toMatch(/disabled for maintenance.*openstack accelerator device enable/);

    expect((await v2('POST', `/devices/${fpga.deviceUuid}/enable`)).statusCode).toBe(200);
    await reservedBecomes(s, fpga.rpUuid, 'FPGA', 0, 'the device back in service');
    expect(await statusOf(fpga.deviceUuid)).toBe('enabled');
    const bound = await bindWithCli('disable-profile', fpga.rpUuid);
    expect(s.conductor.getArq(bound).state).toBe('Bound');
    expect(s.conductor.getAccelerator(fpga.id).allocations.map((a) => a.instanceUuid)).toContain(running);
  });

  it("shows a drained host's devices as maintaining", async () => {
    const fpga = s.accelerator('FakeDevice');
    expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/hosts/${s.host}/drain`, payload: {} })).statusCode).toBe(200);
    expect(await statusOf(fpga.deviceUuid)).toBe('maintaining');
    expect((await s.app.inject({ method: 'DELETE', url: `/cyborg/v1/hosts/${s.host}/drain` })).statusCode).toBe(200);
    expect(await statusOf(fpga.deviceUuid)).toBe('enabled');
  });
});
