/**
 * Defect 10 (review of the operator API): `GET /audit?marker=garbage` answered 400 naming
 * `"field": "cursor"`, the journal's own word, where the caller sent `marker`; the in-memory
 * journal did not refuse it at all and answered the first page. The route now checks the marker
 * itself and names `querystring/marker`, as it names `querystring/since`.
 */
import { describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.js';

const stacks = useStack();

describe('an operator who pages the audit log with a marker it was never given', () => {
  it('is told the marker is wrong, by the name it sent', async () => {
    const s = await stacks.start({ api: true, fake: { gpus: 1, nics: 0 } });
    const res = await s.app.inject({ method: 'GET', url: '/cyborg/v1/audit?marker=garbage' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'request.invalid', field: 'querystring/marker' });
    expect(res.json().message).toMatch(/^marker is not one this service gave/);
  });
});
