/**
 * Defect 11 (review of the operator API): `POST /instances/{uuid}/attach` with `{}` answered 400
 * "name the accelerator to attach" with no `field`, unlike every other refusal of a request, so a
 * client could not point at what to fill in. It now names `acceleratorId` and the alternatives.
 */
import { describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.js';

const stacks = useStack();
const VM = '0d4c3b2a-1908-4776-8554-433221100ffe';

describe('an operator who attaches an instance without saying to what', () => {
  it('is told which field to fill in, and of what else would do', async () => {
    const s = await stacks.start({ api: true, fake: { gpus: 1, nics: 0 } });
    const res = await s.app.inject({ method: 'POST', url: `/cyborg/v1/instances/${VM}/attach`, payload: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'request.invalid',
      field: 'acceleratorId',
      oneOf: ['acceleratorId', 'resourceClass', 'deviceProfileName'],
    });
    expect(res.json().message).toMatch(/^name the accelerator to attach/);
  });
});
