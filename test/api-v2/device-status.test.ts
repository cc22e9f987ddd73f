import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_PROFILE, persona, startCyborg, type Cyborg } from './harness.js';

const at23 = { ...persona.admin, 'openstack-api-version': 'accelerator 2.3' };
type Device = { uuid: string; type: string; status: string };

/**
 * A newly discovered device is not ready for Nova: its accelerators are inactive until an operator
 * enables it. Cyborg's `status` must say so (`maintaining`), or Nova schedules onto it and the
 * first boot fails when the ARQ cannot bind.
 */
describe('device status in v2 says whether the device can take an ARQ', () => {
  let c: Cyborg;
  let fpga: Device;
  const devices = async () => (await c.call('GET', '/v2/devices', { headers: at23 })).json<{ devices: Device[] }>().devices;
  const one = async (uuid: string) => (await c.call('GET', `/v2/devices/${uuid}`, { headers: at23 })).json<Device>().status;

  beforeAll(async () => {
    c = await startCyborg({ hosts: ['status-host'] });
    fpga = (await devices()).find((d) => d.type === 'FPGA')!;
  });
  afterAll(async () => c.stop());

  it('a freshly discovered device, whose accelerators are inactive, is maintaining — in the list and alone', async () => {
    const list = await devices();
    expect(list.length).toBeGreaterThan(0);
    expect(new Set(list.map((d) => d.status))).toEqual(new Set(['maintaining']));
    expect(await one(fpga.uuid)).toBe('maintaining');
    const deployables = (await c.call('GET', '/v2/deployables', { headers: persona.admin })).json<{ deployables: { uuid: string }[] }>().deployables;
    expect(deployables.every((d) => c.conductor.getAccelerator(d.uuid).state === 'inactive')).toBe(true);
  });

  it('enabling it installs its accelerators and makes it enabled; the others stay maintaining', async () => {
    expect((await c.call('POST', `/v2/devices/${fpga.uuid}/enable`, { headers: persona.admin })).statusCode).toBe(200);
    expect(await one(fpga.uuid)).toBe('enabled');
    const list = await devices();
    expect(list.find((d) => d.uuid === fpga.uuid)!.status).toBe('enabled');
    expect(list.filter((d) => d.uuid !== fpga.uuid).every((d) => d.status === 'maintaining')).toBe(true);
  });

  it('an enabled device does take an ARQ', async () => {
    await c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name: 'status-dp', groups: [FAKE_PROFILE] }] });
    const arq = (await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'status-dp' } })).json<{
      arqs: { uuid: string }[];
    }>().arqs[0]!.uuid;
    const bind = await c.call('PATCH', '/v2/accelerator_requests', {
      headers: persona.admin,
      body: {
        [arq]: [
          { op: 'add', path: '/hostname', value: 'status-host' },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf('status-host') },
          { op: 'add', path: '/instance_uuid', value: '3b1c6f1e-9a53-4b0e-9b7e-0d1c2e3f4a5b' },
        ],
      },
    });
    expect(bind.statusCode).toBe(202);
  });

  it('disabling it makes it maintaining again; below 2.3 no status is shown at all', async () => {
    expect((await c.call('POST', `/v2/devices/${fpga.uuid}/disable`, { headers: persona.admin })).statusCode).toBe(200);
    expect(await one(fpga.uuid)).toBe('maintaining');
    expect((await devices()).find((d) => d.uuid === fpga.uuid)!.status).toBe('maintaining');
    const old = (await c.call('GET', `/v2/devices/${fpga.uuid}`, { headers: { ...persona.admin, 'openstack-api-version': 'accelerator 2.2' } })).json<Device>();
    expect(old.status).toBeUndefined();
  });
});
