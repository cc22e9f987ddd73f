import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcceleratorView } from '../../model/index.js';
import { svc } from '../services.js';
import { cyborg } from '../cli/harness.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';
import { Deployment, FAST } from './deployment.js';
import { RoleProcess } from './helpers.js';

/** Every driver operation of the agent's fake driver takes longer than the api → conductor timeout. */
const OP_MS = Number(FAST.CYBORG_REQUEST_TIMEOUT_MS) + 3_000;

/**
 * A driver operation that takes longer than the api's deadline to the conductor: the API answers
 * `202 Accepted` with the accelerator's URL while it goes on (never a 504), the accelerator shows
 * it under way, then settled; the CLI waits for it and prints the outcome.
 */
describe.skipIf(!svc.nats)('operations longer than the request timeout', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let url: string;
  let fpga: AcceleratorView;

  const post = async (path: string, body: object = {}) => {
    const res = await fetch(`${url}/cyborg/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': 'op' },
      body: JSON.stringify(body),
    });
    return { status: res.status, location: res.headers.get('location'), body: (await res.json()) as AcceleratorView };
  };
  const show = async (id: string): Promise<AcceleratorView> => (await fetch(`${url}/cyborg/v1/accelerators/${id}`)).json() as Promise<AcceleratorView>;

  beforeAll(async () => {
    dep = new Deployment(svc.nats!);
    await dep.conductor('conductor-l');
    await dep.agent('node-l', { CYBORG_ENABLED_DRIVERS: 'fake_driver', CYBORG_FAKE_OP_DELAY_MS: String(OP_MS) });
    const port = await freePort();
    const api = RoleProcess.spawn('api-l', ['api', '--port', String(port), '--listen', '127.0.0.1'], dep.env());
    dep.procs.push(api);
    await api.waitLog((l) => l.msg === 'api role up', 'api listening', 120_000);
    url = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, { what: 'the api ready', timeoutMs: 60_000 });
    const list = await eventually(
      async () => {
        const r = (await (await fetch(`${url}/cyborg/v1/accelerators?host=node-l`)).json()) as { accelerators: AcceleratorView[] };
        return r.accelerators.find((a) => a.deviceType === 'FPGA');
      },
      { what: "node-l's FPGA" },
    );
    fpga = list;
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
  });

  it("answers 202 with the accelerator's Location, which shows the work under way and then done", async () => {
    dep.logsOnFailure();
    const enabled = await post(`/accelerators/${fpga.id}/enable`);
    expect(enabled.status).toBe(202);
    expect(enabled.body.state).toBe('installing');
    await eventually(async () => (await show(fpga.id)).state === 'ready', { what: 'the FPGA ready', timeoutMs: 60_000 });

    const programmed = await post(`/accelerators/${fpga.id}/program`, { functionId: 'fn-long' });
    expect(programmed.status).toBe(202);
    expect(programmed.location).toBe(`/cyborg/v1/accelerators/${fpga.id}`);
    expect(programmed.body.state).toBe('programming');
    expect(((await fetch(`${url}${programmed.location}`).then((r) => r.json())) as AcceleratorView).state).toBe('programming');
    await eventually(async () => (await show(fpga.id)).state === 'programmed', { what: 'the FPGA programmed', timeoutMs: 60_000 });
  });

  it('the CLI waits for an accepted operation and prints its outcome; --no-wait returns at once', async () => {
    dep.logsOnFailure();
    const waited = await cyborg('accelerator', 'program', fpga.id, '--function', 'fn-cli', '--url', url);
    expect(waited.stderr).toBe('');
    expect(waited.stdout).toMatch(/: programmed → programmed\n$/);
    expect((await show(fpga.id)).program?.functionId).toBe('fn-cli');

    const quick = await cyborg('accelerator', 'disable', fpga.id, '--no-wait', '--url', url);
    expect(quick.stdout).toMatch(/: programmed → uninstalling \(accepted, still running/);
    await eventually(async () => (await show(fpga.id)).state === 'inactive', { what: 'the FPGA given back', timeoutMs: 60_000 });
  });
});
