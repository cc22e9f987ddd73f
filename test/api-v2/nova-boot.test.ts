import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NovaNotifier } from '../../openstack/nova.js';
import { quietLogger } from '../support/log.js';
import { enableAll, FAKE_PROFILE, fault, persona, startCyborg, type Cyborg } from './harness.js';
import { startNovaRecorder } from './nova-recorder.js';
import { eventually } from '../support/eventually.js';

const HOST = 'cyborg-host1';
const SERVER = '869c8229-75aa-4a29-8319-843061d3223d';

/**
 * Nova boots a server with an accelerator, the way nova-conductor and nova-compute call Cyborg
 * (no microversion header, a user token, Nova's own service token), then deletes it; then an
 * operator does the same by hand with `openstack accelerator` (the item-level forms).
 */
describe('Nova boots and deletes a server with the fake FPGA', () => {
  let c: Cyborg;
  let nova: Awaited<ReturnType<typeof startNovaRecorder>>;
  let notifier: NovaNotifier;
  // Nova sends the user's token and its own service token.
  const novaHeaders = { ...persona.member, 'x-service-roles': 'service' };

  beforeAll(async () => {
    c = await startCyborg({ hosts: [HOST], v2: { serviceTokenRequired: true } });
    nova = await startNovaRecorder();
    notifier = new NovaNotifier({
      novaUrl: nova.url,
      token: 'admin',
      retries: 3,
      retryDelayMs: 20,
      hub: c.conductor.hub,
      getArq: (u) => c.conductor.getArq(u),
      log: quietLogger(),
    }).start();
    await enableAll(c);
  });

  afterAll(async () => {
    await notifier.stop();
    await c.stop();
    await nova.close();
  });

  it('the operator creates the tempest device profile', async () => {
    const res = await c.call('POST', '/v2/device_profiles', {
      headers: persona.admin,
      body: [{ name: 'fake-dp', description: 'fake FPGA profile', groups: [FAKE_PROFILE] }],
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: 'fake-dp', groups: [FAKE_PROFILE] });
  });

  let arq = '';
  it('nova-api validates the flavor: exactly one profile by name; nova-conductor creates the ARQs', async () => {
    const list = await c.call('GET', '/device_profiles?name=fake-dp', { headers: novaHeaders });
    expect(list.statusCode).toBe(200);
    expect(list.json().device_profiles).toHaveLength(1);

    const res = await c.call('POST', '/accelerator_requests', { headers: novaHeaders, body: { device_profile_name: 'fake-dp' } });
    expect(res.statusCode).toBe(201);
    const arqs = res.json().arqs as { uuid: string; state: string; device_profile_group_id: number; project_id: string }[];
    expect(arqs).toHaveLength(1);
    expect(arqs[0]).toMatchObject({ state: 'Initial', device_profile_group_id: 0, project_id: 'demo-project', attach_handle_type: '' });
    arq = arqs[0]!.uuid;
  });

  it('before the bind, Nova\'s "resolved" query is told to wait (423)', async () => {
    const bind = await c.call('PATCH', '/accelerator_requests', { headers: novaHeaders, body: {} });
    expect(bind.statusCode).toBe(400);
    // Not bound to this instance yet: nothing listed, so nothing unresolved.
    const res = await c.call('GET', `/accelerator_requests?instance=${SERVER}&bind_state=resolved`, { headers: novaHeaders });
    expect(res.statusCode).toBe(200);
    expect(res.json().arqs).toEqual([]);
  });

  it('nova-conductor binds the ARQ to the deployable Placement chose; Nova receives the event', async () => {
    const res = await c.call('PATCH', '/accelerator_requests', {
      headers: novaHeaders,
      body: {
        [arq]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
          { op: 'add', path: '/instance_uuid', value: SERVER },
        ],
      },
    });
    expect(res.statusCode).toBe(202);
    expect(res.body).toBe('');
    const got = await eventually(() => nova.received.find((r) => r.body.events.some((e) => e.tag === arq)), { what: "Nova's external event" });
    expect(got.path).toBe('/v2.1/os-server-external-events');
    expect(got.headers['openstack-api-version']).toBe('compute 2.82');
    expect(got.body.events).toEqual([{ name: 'accelerator-request-bound', server_uuid: SERVER, tag: arq, status: 'completed' }]);
  });

  it("nova-compute lists the instance's ARQs resolved, with the TEST_PCI attach handle", async () => {
    const res = await c.call('GET', `/accelerator_requests?instance=${SERVER}&bind_state=resolved`, { headers: novaHeaders });
    expect(res.statusCode).toBe(200);
    const [a] = res.json().arqs;
    expect(a).toMatchObject({
      uuid: arq,
      state: 'Bound',
      hostname: HOST,
      device_rp_uuid: c.rpOf(HOST),
      instance_uuid: SERVER,
      attach_handle_type: 'TEST_PCI',
      attach_handle_info: { domain: '0000', bus: '0c', device: '0', function: '1' },
    });
    expect(a.attach_handle_uuid).toMatch(/^[0-9a-f-]{36}$/);
    // The accelerator behind it is attached, through the transition log.
    const acc = c.conductor.getAcceleratorByRp(c.rpOf(HOST))!;
    expect(acc.state).toBe('attached');
    const history = await c.conductor.history(arq);
    expect(history.map((h) => `${h.from}->${h.to}`)).toEqual(['none->Initial', 'Initial->BindStarted', 'BindStarted->Bound']);
  });

  it('a second bind for the same instance is refused (no incremental attach)', async () => {
    const more = await c.call('POST', '/accelerator_requests', { headers: novaHeaders, body: { device_profile_name: 'fake-dp' } });
    const other = more.json().arqs[0].uuid as string;
    const res = await c.call('PATCH', '/accelerator_requests', {
      headers: novaHeaders,
      body: {
        [other]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
          { op: 'add', path: '/instance_uuid', value: SERVER },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(fault(res)).toContain('already has accelerator requests');
    expect((await c.call('DELETE', `/accelerator_requests?arqs=${other}`, { headers: novaHeaders })).statusCode).toBe(204);
  });

  it('deleting the server deletes its ARQs by instance, twice (204 both), freeing the handle', async () => {
    const first = await c.call('DELETE', `/accelerator_requests?instance=${SERVER}`, { headers: novaHeaders });
    expect(first.statusCode).toBe(204);
    const second = await c.call('DELETE', `/accelerator_requests?instance=${SERVER}`, { headers: novaHeaders });
    expect(second.statusCode).toBe(204);
    expect((await c.call('GET', `/accelerator_requests/${arq}`, { headers: novaHeaders })).statusCode).toBe(404);
    expect(c.conductor.getAcceleratorByRp(c.rpOf(HOST))!.allocations).toEqual([]);
  });

  it('without the service token, bind and delete-by-instance are refused (CVE-2026-40214)', async () => {
    const created = await c.call('POST', '/accelerator_requests', { headers: persona.member, body: { device_profile_name: 'fake-dp' } });
    const u = created.json().arqs[0].uuid as string;
    const bind = await c.call('PATCH', '/accelerator_requests', {
      headers: persona.member,
      body: {
        [u]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
          { op: 'add', path: '/instance_uuid', value: SERVER },
        ],
      },
    });
    expect(bind.statusCode).toBe(403);
    expect(fault(bind)).toContain('requires a service token');
    const del = await c.call('DELETE', `/accelerator_requests?instance=${SERVER}`, { headers: persona.member });
    expect(del.statusCode).toBe(403);
    expect(fault(del)).toContain('requires a service token');
    expect((await c.call('DELETE', `/accelerator_requests/${u}`, { headers: persona.member })).statusCode).toBe(204);
  });

  it('the CLI binds, unbinds and deletes one ARQ with the item-level forms', async () => {
    const cli = { ...persona.admin, 'x-service-roles': 'service', 'openstack-api-version': 'accelerator 2.3' };
    const created = await c.call('POST', '/accelerator_requests', { headers: cli, body: { device_profile_name: 'fake-dp' } });
    const u = created.json().arqs[0].uuid as string;
    const instance = '5d7b8a3e-0c2f-4f55-9a43-6e4d3b3f1a10';
    // openstacksdk sends the map keyed by the ARQ to the item URL; a bare list is accepted too.
    const bind = await c.call('PATCH', `/accelerator_requests/${u}`, {
      headers: cli,
      body: {
        [u]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
          { op: 'add', path: '/instance_uuid', value: instance },
        ],
      },
    });
    expect(bind.statusCode).toBe(202);
    const shown = await c.call('GET', `/accelerator_requests/${u}`, { headers: cli });
    expect(shown.json()).toMatchObject({ state: 'Bound', instance_uuid: instance, attach_handle_type: 'TEST_PCI' });
    await eventually(() => nova.received.some((r) => r.body.events.some((e) => e.tag === u)), { what: 'event for the CLI bind' });

    const unbind = await c.call('PATCH', `/accelerator_requests/${u}`, {
      headers: cli,
      body: [
        { op: 'remove', path: '/hostname' },
        { op: 'remove', path: '/device_rp_uuid' },
        { op: 'remove', path: '/instance_uuid' },
      ],
    });
    expect(unbind.statusCode).toBe(202);
    const after = await c.call('GET', `/accelerator_requests/${u}`, { headers: cli });
    expect(after.json()).toMatchObject({
      state: 'Unbound',
      hostname: null,
      device_rp_uuid: null,
      instance_uuid: null,
      attach_handle_type: '',
      attach_handle_info: {},
    });

    expect((await c.call('DELETE', `/accelerator_requests/${u}`, { headers: cli })).statusCode).toBe(204);
    expect((await c.call('GET', `/accelerator_requests/${u}`, { headers: cli })).statusCode).toBe(404);
  });

  it('a profile asking for two FPGAs binds both ARQs to the one deployable in one PATCH', async () => {
    await c.call('POST', '/device_profiles', {
      headers: persona.admin,
      body: [{ name: 'two-fpgas', groups: [{ 'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }],
    });
    const created = await c.call('POST', '/accelerator_requests', { headers: novaHeaders, body: { device_profile_name: 'two-fpgas' } });
    const uuids = (created.json().arqs as { uuid: string }[]).map((a) => a.uuid);
    expect(uuids).toHaveLength(2);
    const instance = '0f3b8f4e-1d1c-4a53-8b0e-2f7f4f1c9d21';
    const ops = [
      { op: 'add', path: '/hostname', value: HOST },
      { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
      { op: 'add', path: '/instance_uuid', value: instance },
    ];
    const res = await c.call('PATCH', '/accelerator_requests', { headers: novaHeaders, body: Object.fromEntries(uuids.map((u) => [u, ops])) });
    expect(res.statusCode).toBe(202);
    const listed = await c.call('GET', `/accelerator_requests?instance=${instance}&bind_state=resolved`, { headers: novaHeaders });
    const arqs = listed.json().arqs as { state: string; attach_handle_info: Record<string, string> }[];
    expect(arqs.map((a) => a.state)).toEqual(['Bound', 'Bound']);
    expect(new Set(arqs.map((a) => a.attach_handle_info.function)).size).toBe(2);
    expect((await c.call('DELETE', `/accelerator_requests?instance=${instance}`, { headers: novaHeaders })).statusCode).toBe(204);
  });

  it('when Nova is briefly unavailable, the event is retried until it lands', async () => {
    nova.failNext(2);
    const created = await c.call('POST', '/accelerator_requests', { headers: novaHeaders, body: { device_profile_name: 'fake-dp' } });
    const u = created.json().arqs[0].uuid as string;
    const instance = '7a0d3c55-9b7e-4d0a-8f5e-2a6f0b9c3e11';
    await c.call('PATCH', '/accelerator_requests', {
      headers: novaHeaders,
      body: {
        [u]: [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: c.rpOf(HOST) },
          { op: 'add', path: '/instance_uuid', value: instance },
        ],
      },
    });
    await eventually(() => nova.received.some((r) => r.body.events.some((e) => e.tag === u)), { what: 'the retried event' });
    await c.call('DELETE', `/accelerator_requests?instance=${instance}`, { headers: novaHeaders });
  });
});
