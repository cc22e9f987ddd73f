/**
 * An action on a host whose agent does not answer (it died; its host is not yet counted lost)
 * is answered at the driver operation's deadline with 503 and Retry-After — "not done, try again"
 * — never a bare 504 and never a hang; Cyborg's routes answer it the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../support/stack.js';

describe('an agent that does not answer', () => {
  let rt: Stack;

  beforeAll(async () => {
    rt = await startStack({ hosts: ['silent-1'], fake: { gpus: 1, nics: 0 }, timing: { driverOpTimeoutMs: 800 }, api: true });
  });
  afterAll(async () => rt?.stop());

  it("makes an operator's enable a 503 with Retry-After at its deadline", async () => {
    const gpu = rt.conductor.listAccelerators({ host: 'silent-1' }).find((a) => a.deviceType === 'GPU')!;
    await rt.agents[0]!.stop();
    const res = await rt.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu.id}/enable` });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.json()).toMatchObject({ code: 'driver.timeout' });
  });
});
