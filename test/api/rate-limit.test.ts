import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { silentLogger } from '../../config/logger.js';
import { type Stack, startStack } from '../support/stack.js';

const PER_MINUTE = 3;

/**
 * Writes to the operator API are limited per client (`api.operatorRateLimit` a minute): per user
 * where one is known, else per address; one more is a 429 with Retry-After. Reads, health and
 * Nova's v2 calls are never limited.
 */
describe('operator write rate per client', () => {
  let rt: Stack;
  let app: FastifyInstance;
  let gpu = '';

  beforeAll(async () => {
    rt = await startStack({ hosts: ['rate-1'], fake: { gpus: 1, nics: 0 } });
    const driver = rt.conductor.listAccelerators().find((a) => a.deviceType === 'GPU')!.driver;
    app = await buildApi({
      control: rt.conductor,
      log: silentLogger(),
      limits: { operatorRateLimit: PER_MINUTE },
      // The roles' own writes, here doing nothing: what counts is that they are counted.
      hostRetirer: { retire: async (host) => ({ host, accelerators: [] }) },
      faultInjector: { driver, inject: async () => undefined },
    });
    gpu = rt.conductor.listAccelerators().find((a) => a.deviceType === 'GPU')!.id;
  });
  afterAll(async () => {
    await app?.close();
    await rt?.stop();
  });

  // RETRY from `inactive` is refused (409): a write all the same, and one that changes nothing.
  const write = (headers: Record<string, string>, remoteAddress = '127.0.0.1') =>
    app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu}/retry`, headers, remoteAddress });

  it('answers one write more than the limit with 429 and Retry-After, for that user only', async () => {
    for (let i = 0; i < PER_MINUTE; i++) expect((await write({ 'x-user-id': 'alice' })).statusCode).toBe(409);
    const refused = await write({ 'x-user-id': 'alice' });
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.json()).toMatchObject({ code: 'request.rate_limited', limit: PER_MINUTE });
    // Another user from the same address is counted apart.
    expect((await write({ 'x-user-id': 'bob' })).statusCode).toBe(409);
  });

  it('counts a client with no user by its address', async () => {
    for (let i = 0; i < PER_MINUTE; i++) expect((await write({}, '10.0.0.7')).statusCode).toBe(409);
    expect((await write({}, '10.0.0.7')).statusCode).toBe(429);
    expect((await write({}, '10.0.0.8')).statusCode).toBe(409);
  });

  it('counts a fake fault and a host deletion as writes like any other', async () => {
    const carol = { 'x-user-id': 'carol' };
    const fault = () => app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu}/fake-fault`, headers: carol, payload: { fault: 'clear' } });
    const retire = () => app.inject({ method: 'DELETE', url: '/cyborg/v1/hosts/gone-1', headers: carol });
    for (let i = 0; i < PER_MINUTE - 1; i++) expect((await fault()).statusCode).toBe(200);
    expect((await retire()).statusCode).toBe(200);
    expect((await retire()).statusCode).toBe(429);
    expect((await fault()).statusCode).toBe(429);
  });

  it("never limits reads, health or Nova's v2 calls", async () => {
    const alice = { 'x-user-id': 'alice' };
    for (let i = 0; i < PER_MINUTE * 3; i++) {
      expect((await app.inject({ method: 'GET', url: '/cyborg/v1/accelerators', headers: alice })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const v2 = await app.inject({
        method: 'POST',
        url: '/v2/device_profiles',
        headers: { ...alice, 'x-roles': 'admin', 'x-project-id': 'p' },
        payload: [{ name: `rate-dp-${i}`, groups: [{ 'resources:GPU': '1' }] }],
      });
      expect(v2.statusCode).toBe(201);
    }
  });
});
