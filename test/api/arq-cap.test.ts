import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fault, persona, startCyborg, type Cyborg } from '../api-v2/harness.js';

/**
 * One POST /v2/accelerator_requests creates one ARQ per resource of every group of its device
 * profile: a profile asking for thousands would create thousands of records in one request. The
 * api refuses more than `api.maxArqsPerRequest` (64 by default) with a 400 naming the groups, when
 * the profile is created and when ARQs are asked of one stored before the cap.
 */
describe('ARQs per device-profile request are capped', () => {
  let c: Cyborg;
  beforeAll(async () => {
    c = await startCyborg({ hosts: ['arq-cap-host'] });
  });
  afterAll(async () => c?.stop());

  const createProfile = (name: string, groups: Record<string, string>[]) =>
    c.call('POST', '/v2/device_profiles', { headers: persona.admin, body: [{ name, groups }] });

  it('takes a profile of exactly the cap and refuses one over it, in one group or across groups', async () => {
    expect((await createProfile('at-cap', [{ 'resources:FPGA': '64' }])).statusCode).toBe(201);
    const over: Record<string, string>[][] = [
      [{ 'resources:FPGA': '65' }],
      [{ 'resources:GPU': '40' }, { 'resources:FPGA': '20', 'trait:CUSTOM_FPGA_XILINX': 'required' }],
    ];
    for (const groups of over) {
      const res = await createProfile(`over-${randomUUID().slice(0, 8)}`, groups);
      expect(res.statusCode).toBe(400);
      expect(fault(res)).toMatch(/groups ask for \d+ accelerator requests; at most 64/);
    }
  });

  it('refuses ARQs from a stored profile over the cap and creates nothing', async () => {
    await c.conductor.documents.createProfile({
      uuid: randomUUID(),
      name: 'stored-huge',
      description: '',
      groups: [{ 'resources:FPGA': '5000' }],
      createdAt: new Date().toISOString(),
      updatedAt: null,
    });
    const before = c.conductor.listArqs().length;
    const res = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'stored-huge' } });
    expect(res.statusCode).toBe(400);
    expect(fault(res)).toContain('at most 64');
    expect(c.conductor.listArqs().length).toBe(before);
  });

  it('creates the ARQs of a profile within the cap', async () => {
    const res = await c.call('POST', '/v2/accelerator_requests', { headers: persona.admin, body: { device_profile_name: 'at-cap' } });
    expect(res.statusCode).toBe(201);
    expect(res.json<{ arqs: unknown[] }>().arqs).toHaveLength(64);
  });
});
