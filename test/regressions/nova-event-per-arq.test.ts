/**
 * Issue 42: Nova got one `os-server-external-events` POST per ARQ: results were batched per
 * tick, and an instance's binds seldom resolve in the same one. Cyborg's own notify_binding sends
 * an instance's results in one request. Now an instance's results wait until none of its ARQs is
 * still binding, and go out together: an instance with two GPUs, one slower to attach, is one POST.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NovaNotifier } from '../../openstack/nova.js';
import { quietLogger } from '../support/log.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';
import { persona } from '../api-v2/harness.js';
import { startNovaRecorder } from '../api-v2/nova-recorder.js';

const HOST = 'nova-batch-host';
const SERVER = '3b0f2c4e-8d1a-4f6b-9e2c-7a5d4c3b2a10';
const novaHeaders = { ...persona.member, 'x-service-roles': 'service' };

describe("an instance's bind results reach Nova in one request", () => {
  let s: Stack;
  let nova: Awaited<ReturnType<typeof startNovaRecorder>>;
  let notifier: NovaNotifier;
  beforeAll(async () => {
    s = await startStack({ hosts: [HOST], fake: { gpus: 2 }, api: true, log: quietLogger(), agent: { telemetryIntervalMs: 0 } });
    nova = await startNovaRecorder();
    notifier = new NovaNotifier({
      novaUrl: nova.url,
      token: 'admin',
      retries: 1,
      retryDelayMs: 20,
      hub: s.conductor.hub,
      getArq: (u) => s.conductor.getArq(u),
      arqsOfInstance: (instanceUuid) => s.conductor.listArqs({ instanceUuid }),
      log: quietLogger(),
    }).start();
  });
  afterAll(async () => {
    await notifier?.stop();
    await s?.stop();
    await nova?.close();
  });

  const call = (method: 'POST' | 'PATCH', url: string, body: unknown, headers: Record<string, string> = novaHeaders) =>
    s.app.inject({ method, url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  it('two GPUs of one server, the second slower to attach: one POST naming both ARQs', async () => {
    const gpus = s.conductor.listAccelerators({ type: 'GPU' });
    for (const g of gpus) expect((await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${g.id}/enable`, payload: {} })).statusCode).toBe(200);
    const group = { 'resources:PGPU': '1' };
    expect((await call('POST', '/v2/device_profiles', [{ name: 'two-gpus', groups: [group, group] }], persona.admin)).statusCode).toBe(201);
    const created = await call('POST', '/accelerator_requests', { device_profile_name: 'two-gpus' });
    expect(created.statusCode).toBe(201);
    const arqs = (created.json().arqs as { uuid: string }[]).map((a) => a.uuid);
    expect(arqs).toHaveLength(2);
    s.fakes[0]!.slowDown('attach', 400, gpus[1]!.id);
    const patch = Object.fromEntries(
      arqs.map((uuid, i) => [
        uuid,
        [
          { op: 'add', path: '/hostname', value: HOST },
          { op: 'add', path: '/device_rp_uuid', value: gpus[i]!.rpUuid },
          { op: 'add', path: '/instance_uuid', value: SERVER },
        ],
      ]),
    );
    expect((await call('PATCH', '/accelerator_requests', patch)).statusCode).toBe(202);
    await eventually(() => s.conductor.listArqs({ instanceUuid: SERVER }).every((a) => a.state === 'Bound'), { what: 'both ARQs bound' });
    await eventually(() => nova.received.flatMap((r) => r.body.events).length === 2, { what: 'both results told to Nova' });
    expect(nova.received).toHaveLength(1);
    expect(nova.received[0]!.body.events.map((e) => [e.server_uuid, e.tag, e.status]).sort()).toEqual(arqs.map((a) => [SERVER, a, 'completed']).sort());
  });
});
