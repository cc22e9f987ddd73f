/**
 * Issue 42: an attach by resource class on a host being drained answered only "group 0
 * (PGPU=1): no candidates", so the operator who had forgotten the drain was told nothing. Now the
 * refusal names each card of that class that cannot take an instance, why, and the way out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../support/stack.js';

const HOST = 'drained-host';
const VM = '7e1d2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b';

describe('an attach by resource class where every card of it is on a drained host', () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ hosts: [HOST], fake: { gpus: 1 }, api: true });
  });
  afterAll(async () => {
    await s?.stop();
  });
  const post = (url: string, payload: object = {}) => s.app.inject({ method: 'POST', url: `/cyborg/v1${url}`, payload });

  it('409 none_available naming the drain, the card and how to cancel it', async () => {
    const [gpu] = s.conductor.listAccelerators({ type: 'GPU' });
    expect((await post(`/accelerators/${gpu!.id}/enable`)).statusCode).toBe(200);
    expect((await post(`/hosts/${HOST}/drain`)).statusCode).toBe(200);
    const res = await post(`/instances/${VM}/attach`, { resourceClass: 'PGPU' });
    const body = res.json<{ code: string; message: string }>();
    expect(body.code).toBe('accelerator.none_available');
    expect(body.message).not.toContain('no candidates');
    expect(body.message).toContain(`accelerator ${gpu!.name} (${gpu!.id}) on ${HOST} is out of service: its host ${HOST} is being drained`);
    expect(body.message).toContain(`cyborg host drain ${HOST} --cancel`);

    // Once the drain is cancelled the same request attaches.
    expect((await s.app.inject({ method: 'DELETE', url: `/cyborg/v1/hosts/${HOST}/drain` })).statusCode).toBe(200);
    expect((await post(`/instances/${VM}/attach`, { resourceClass: 'PGPU' })).statusCode).toBe(200);
  });
});
