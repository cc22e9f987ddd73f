import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.js';

let rt: Stack;
let app: FastifyInstance;
const base = '/cyborg/v1';
const vm = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';

beforeEach(async () => {
  rt = await startStack({ api: true });
  app = rt.app;
});
afterEach(async () => {
  await rt.stop();
});

async function fpga(): Promise<string> {
  const res = await app.inject({ url: `${base}/accelerators?type=FPGA` });
  return res.json().accelerators[0].id as string;
}

const post = (url: string, payload?: unknown) => app.inject({ method: 'POST', url, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('operator API', () => {
  it('lists hosts and accelerators with their state and allowed events', async () => {
    const hosts = await app.inject({ url: `${base}/hosts` });
    expect(hosts.statusCode).toBe(200);
    expect(hosts.json().hosts[0]).toMatchObject({ name: 'compute-1', state: 'online', drivers: [{ name: 'fake', version: '1.0.0' }] });
    const list = await app.inject({ url: `${base}/accelerators` });
    expect(list.json().accelerators[0]).toMatchObject({ state: 'inactive', allowed: ['ENABLE', 'REMOVE'] });
  });

  it('walks an accelerator inactive → ready → programmed → attached → detached, and refuses a forbidden step with 409', async () => {
    const id = await fpga();
    expect((await post(`${base}/accelerators/${id}/enable`)).json().state).toBe('ready');
    expect((await post(`${base}/accelerators/${id}/program`, { bitstreamId: 'bs-1' })).json().state).toBe('programmed');
    const attached = await post(`${base}/accelerators/${id}/attach`, { instanceUuid: vm });
    expect(attached.statusCode).toBe(200);
    expect(attached.json()).toMatchObject({ state: 'attached', allocations: [{ instanceUuid: vm }] });
    const refused = await post(`${base}/accelerators/${id}/program`, { bitstreamId: 'bs-2' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'accelerator.transition_invalid', state: 'attached', allowed: ['ATTACH', 'DETACH'] });
    expect(refused.json().message).toMatch(/PROGRAM is not allowed now/);
    expect((await post(`${base}/accelerators/${id}/detach`, { instanceUuid: vm })).json().state).toBe('programmed');
  });

  it('answers racing requests on one accelerator with exactly one 200 and 409s', async () => {
    const id = await fpga();
    rt.fakes[0]!.slowDown('install', 20);
    const codes = (await Promise.all(Array.from({ length: 5 }, () => post(`${base}/accelerators/${id}/enable`)))).map((r) => r.statusCode).sort();
    expect(codes).toEqual([200, 409, 409, 409, 409]);
  });

  it("reports a driver failure as 502 with the driver's reason, and retry recovers", async () => {
    const id = await fpga();
    rt.fakes[0]!.injectFailure('install', 'no power on slot 3');
    const res = await post(`${base}/accelerators/${id}/enable`);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ code: 'driver.failed', accelerator: { state: 'error', error: { reason: 'no power on slot 3' } } });
    expect((await post(`${base}/accelerators/${id}/retry`)).json().state).toBe('ready');
  });

  it('answers bad input with 400 and a clear message', async () => {
    const id = await fpga();
    const cases = [
      await app.inject({ url: `${base}/accelerators/not-a-uuid` }),
      await post(`${base}/accelerators/${id}/attach`, { instanceUuid: 'nope' }),
      await post(`${base}/accelerators/${id}/attach`, {}),
      await post(`${base}/accelerators/${id}/program`, { bitstreamId: 42, extra: true }),
      await app.inject({
        method: 'POST',
        url: `${base}/accelerators/${id}/program`,
        headers: { 'content-type': 'application/json' },
        payload: '{"bitstreamId":',
      }),
      await app.inject({ url: `${base}/accelerators?color=blue` }),
    ];
    for (const r of cases) {
      expect(r.statusCode).toBe(400);
      expect(r.json().code).toBe('request.invalid');
      expect(r.json().message.length).toBeGreaterThan(5);
    }
  });

  it('refuses a program that names no image, or two, with 400 naming the field, and leaves the device as it was', async () => {
    const id = await fpga();
    expect((await post(`${base}/accelerators/${id}/enable`)).json().state).toBe('ready');
    const nothing = await post(`${base}/accelerators/${id}/program`, {});
    expect(nothing.statusCode).toBe(400);
    expect(nothing.json()).toMatchObject({ code: 'request.invalid', field: 'body/bitstreamId', oneOf: ['bitstreamId', 'functionId'] });
    expect((await post(`${base}/accelerators/${id}/program`)).json()).toMatchObject({ field: 'body/bitstreamId' });
    const both = await post(`${base}/accelerators/${id}/program`, { bitstreamId: 'bs-1', functionId: 'gzip' });
    expect(both.statusCode).toBe(400);
    expect(both.json()).toMatchObject({ code: 'request.invalid', field: 'body/functionId' });
    expect(both.json().message).toMatch(/not both/);
    expect(rt.conductor.getAccelerator(id).state).toBe('ready');
    expect((await rt.conductor.history(id)).map((r) => r.event)).not.toContain('PROGRAM');
  });

  it('answers unknown things with 404', async () => {
    const missing = await app.inject({ url: `${base}/accelerators/${vm}` });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'accelerator.not_found' });
    expect((await post(`${base}/accelerators/${vm}/enable`)).statusCode).toBe(404);
    expect((await app.inject({ url: `${base}/hosts/nowhere` })).json()).toMatchObject({ code: 'host.not_found' });
    expect((await app.inject({ url: `${base}/nothing-here` })).statusCode).toBe(404);
  });

  it('says it is alive', async () => {
    expect((await app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
  });
});
