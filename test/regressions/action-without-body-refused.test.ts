/**
 * Defect 17 (review of the operator API): `curl -XPOST .../maintenance`, as docs/cli.md shows it,
 * sends no body, and was refused with 400 "body must be object" — so were reset, clear-health, a
 * host's drain and an instance's detach — while enable and detach took it. Every operator route
 * now reads an absent body as `{}`, and still refuses a body with a field it does not know.
 */
import { describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.js';

const stacks = useStack();
const VM = '5f1e2d3c-4b5a-4968-8776-655443322110';

describe('an operator who posts an action with no body', () => {
  it('is answered as if the body were {}, on every action that takes nothing', async () => {
    const s = await stacks.start({ api: true, fake: { gpus: 1, nics: 0 } });
    const post = (url: string) => s.app.inject({ method: 'POST', url: `/cyborg/v1${url}` });
    const gpu = s.conductor.listAccelerators({ type: 'GPU' })[0]!.id;

    expect((await post(`/accelerators/${gpu}/enable`)).statusCode).toBe(200);
    expect((await post(`/accelerators/${gpu}/reset`)).json()).toMatchObject({ id: gpu, state: 'ready' });
    expect((await post(`/accelerators/${gpu}/clear-health`)).json()).toMatchObject({ id: gpu, state: 'ready' });
    expect((await post(`/accelerators/${gpu}/maintenance`)).json()).toMatchObject({ maintenance: { scopes: ['device'] } });
    expect((await post('/hosts/compute-1/drain')).json()).toMatchObject({ host: 'compute-1', state: 'drained' });
    expect((await post(`/instances/${VM}/detach`)).json()).toMatchObject({ instanceUuid: VM, arqs: [] });
  });

  it('still refuses a body carrying a field the action does not take, naming it', async () => {
    const s = await stacks.start({ api: true, fake: { gpus: 1, nics: 0 } });
    const gpu = s.conductor.listAccelerators({ type: 'GPU' })[0]!.id;
    const res = await s.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu}/maintenance`, payload: { force: true } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'request.invalid', field: 'body/force' });
  });
});
