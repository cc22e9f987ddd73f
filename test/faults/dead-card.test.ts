import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { RemoteControlPlane, remoteArqCalls, serveControlPlane, ViewPublisher } from '../../control/index.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { cyborg } from '../cli/harness.js';
import { quietLogger } from '../support/log.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * A GPU dies under an instance: its detach fails at the driver, the card sits in `error` holding
 * the instance. The operator releases the instance from it (`cyborg accelerator release`), which
 * frees the handle in Cyborg's records and leaves the card flagged in error, then removes the
 * card. Each step is audited with who asked; releasing an instance that is not there changes
 * nothing and says so.
 */
describe('the end of a card that died under an instance', () => {
  let r: Running;
  const fake = new FakeDriver({ host: 'dead-host', gpus: 1, nics: 0 });
  const run = (...argv: string[]) => cyborg(...argv, '--url', r.url);
  const vm = '7c1f5a0e-3b2d-4c8e-9f10-aa11bb22cc33';
  const GPU = 'dead-host_fake_gpu_40';

  beforeAll(async () => {
    const config = loadConfig(
      { host: 'dead-host', listen: { address: '127.0.0.1', port: 0 }, logLevel: 'silent', logPretty: false, api: { operatorRateLimit: 0 } },
      {},
    );
    r = await startAllInOne(config, quietLogger(), { journal: new MemoryJournal(), fake });
  });
  afterAll(async () => {
    await r?.stop();
  });

  const gpu = () => r.conductor.listAccelerators().find((a) => a.name === GPU)!;

  it('releases the instance from the dead card, leaves the card in error, and lets it be removed', async () => {
    await r.conductor.act(gpu().id, { type: 'ENABLE' });
    await r.conductor.attach(gpu().id, { instanceUuid: vm });
    fake.injectFailure('detach', 'GPU has fallen off the bus', 100);
    const detach = await run('accelerator', 'detach', GPU, '--instance', vm);
    expect(detach.code).not.toBe(0);
    expect(gpu()).toMatchObject({ state: 'error', error: { op: 'detach' }, allocations: [expect.objectContaining({ instanceUuid: vm })] });
    // remove is refused while the instance is on it, saying why and the way out.
    const refused = await run('accelerator', 'remove', GPU);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      new RegExp(
        `REMOVE is not allowed now — instance\\(s\\) ${vm} hold it: detach them first .*release them \\(cyborg accelerator release ${GPU} --instance <uuid>\\)`,
      ),
    );

    const released = await run('accelerator', 'release', GPU, '--instance', vm);
    expect([released.code, released.stderr]).toEqual([0, '']);
    expect(released.stdout).toMatch(new RegExp(`^${GPU}: ${vm} released; error \\(detach: .*GPU has fallen off the bus.*\\), 0 instance\\(s\\) left`));
    expect(gpu()).toMatchObject({ state: 'error', allocations: [] });
    const history = await r.conductor.history(gpu().id);
    const row = history.find((h) => h.event === 'RELEASE');
    // Audited with who asked (the CLI's user under noauth).
    expect([row?.from, row?.to, row?.actor, row?.args?.released]).toEqual(['error', 'error', 'cli', vm]);

    expect((await run('accelerator', 'remove', GPU)).code).toBe(0);
    expect(gpu().state).toBe('removed');
  });

  it('refuses an instance that is not on the card, and a card that can still detach, changing nothing', async () => {
    const other = r.conductor.listAccelerators().find((a) => a.deviceType === 'FPGA')!;
    await r.conductor.act(other.id, { type: 'ENABLE' });
    await r.conductor.attach(other.id, { instanceUuid: vm });
    const notThere = await r.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${other.id}/release`, payload: { instanceUuid: 'vm-elsewhere' } });
    expect(notThere.statusCode).toBe(400);
    expect(notThere.json()).toMatchObject({ code: 'request.invalid', field: 'instanceUuid' });
    expect(notThere.json().message).toContain(`on it: ${vm}`);
    const healthy = await r.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${other.id}/release`, payload: { instanceUuid: vm } });
    expect(healthy.statusCode).toBe(409);
    expect(healthy.json().message).toMatch(/detach the instance instead \(cyborg accelerator detach/);
    expect(r.conductor.getAccelerator(other.id)).toMatchObject({ state: 'attached', allocations: [expect.objectContaining({ instanceUuid: vm })] });
  });

  it('cyborg host list and show name the host, its state and its accelerators', async () => {
    const list = await run('host', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/│ dead-host\s+│ online\s+│/);
    const show = await run('host', 'show', 'dead-host');
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^host dead-host: online; agent /);
    expect(show.stdout).toContain('dead-host_FakeDevice');
    const unknown = await run('host', 'show', 'nowhere');
    expect(unknown.code).toBe(3);
  });
});

describe('an ARQ whose card died before Nova deleted the server', () => {
  let s: Stack | undefined;
  afterAll(async () => {
    await s?.stop();
  });

  it('stops retrying its release once the operator has released the instance, and is deleted', async () => {
    s = await startStack({ timing: { driverOpTimeoutMs: 2_000 } });
    const c = s.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-dead' })).state).toBe('Bound');
    s.fakes[0]!.injectFailure('detach', 'FPGA does not answer on the PCIe bus', 1_000);
    // Nova deletes the server: the release fails at the driver, and would be retried for ever.
    await c.deleteArq(arq.uuid).catch(() => undefined);
    await eventually(() => c.getAccelerator(fpga.id).state === 'error', { what: 'the card in error, still holding the instance' });
    expect(c.getAccelerator(fpga.id).allocations.map((a) => a.instanceUuid)).toEqual(['vm-dead']);

    await c.act(fpga.id, { type: 'RELEASE', instanceUuid: 'vm-dead' }, { actor: 'ops-alice' });
    c.rounds.reconcile(true);
    await eventually(
      () => {
        try {
          return c.getArq(arq.uuid).state === 'Deleted';
        } catch {
          return true; // gone
        }
      },
      { what: 'the ARQ deleted' },
    );
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'error', allocations: [] });
    expect((await c.history(fpga.id)).find((h) => h.event === 'RELEASE')?.actor).toBe('ops-alice');
  });

  it('a card that died under a running server: the release makes its ARQ a failed bind, which Nova deletes with the server', async () => {
    await s?.stop();
    s = await startStack({ timing: { driverOpTimeoutMs: 2_000 } });
    const c = s.conductor;
    const fpga = c.listAccelerators({ type: 'FPGA' })[0]!;
    await c.act(fpga.id, { type: 'ENABLE' });
    const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
    await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-live' });
    // The card falls off the bus; the operator's detach fails at the driver and leaves it in error.
    s.fakes[0]!.injectFailure('detach', 'GPU has fallen off the bus', 1_000);
    await c.detach(fpga.id, { instanceUuid: 'vm-live' }).catch(() => undefined);
    await eventually(() => c.getAccelerator(fpga.id).state === 'error', { what: 'the card in error' });
    expect(c.getArq(arq.uuid).state).toBe('Bound');

    await c.act(fpga.id, { type: 'RELEASE', instanceUuid: 'vm-live' }, { actor: 'ops-bob', actorName: 'bob' });
    const failed = c.getArq(arq.uuid);
    expect(failed).toMatchObject({ state: 'BindFailed', cyborgState: 'BindFailed', boundTo: null, binding: { instanceUuid: 'vm-live' } });
    expect(failed.error).toMatch(/^released: accelerator .* \(error\) released instance vm-live by bob$/);
    const logged = (await c.history(arq.uuid)).at(-1);
    expect([logged?.from, logged?.to, logged?.event, logged?.actor]).toEqual(['Bound', 'BindFailed', 'RELEASED', 'ops-bob']);
    // Nova deletes the server: the ARQ goes, and the dead card is not touched again.
    expect((await c.deleteArq(arq.uuid)).state).toBe('Deleted');
    expect(c.getAccelerator(fpga.id)).toMatchObject({ state: 'error', allocations: [] });
  });

  it('with several conductors the ARQ home is told over the control protocol (arqReleased), and only a bound ARQ takes it', async () => {
    await s?.stop();
    s = await startStack();
    const c = s.conductor;
    const publisher = new ViewPublisher(s.bus, c, 'c1');
    const stopServing = serveControlPlane({ bus: s.bus, conductor: c, conductorId: 'c1', publisher, timeoutMs: 5_000, log: quietLogger() });
    try {
      const arq = await c.createArq({ deviceProfileName: 'fpga', deviceProfileGroupId: 0, projectId: 'p1' });
      const remote = remoteArqCalls(s.bus, { ownerOf: () => undefined, liveConductors: () => ['c1'] } as never, 'c2', 5_000, () => undefined);
      expect(await remote.released(arq.uuid, 'card dead', { actor: 'ops-bob' })).toBe(false); // Initial: nothing to fail
      const gpu = c.listAccelerators({ type: 'FPGA' })[0]!;
      await c.act(gpu.id, { type: 'ENABLE' });
      await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: gpu.rpUuid, instanceUuid: 'vm-2' });
      expect(await remote.released(arq.uuid, 'card dead', { actor: 'ops-bob' })).toBe(true);
      expect(c.getArq(arq.uuid)).toMatchObject({ state: 'BindFailed', error: 'released: card dead' });
    } finally {
      stopServing();
      publisher.stop();
    }
  });
});

describe('a host gone for good', () => {
  let r: Running | undefined;
  const fake = new FakeDriver({ host: 'gone-host', gpus: 1, nics: 0 });
  afterAll(async () => {
    await r?.stop();
  });

  it('is deleted only once lost and empty: gone from the API and the metrics, audited with who', async () => {
    const config = loadConfig(
      {
        host: 'gone-host',
        listen: { address: '127.0.0.1', port: 0 },
        logLevel: 'silent',
        logPretty: false,
        api: { operatorRateLimit: 0 },
        timing: { heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 },
      },
      {},
    );
    const journal = new MemoryJournal();
    r = await startAllInOne(config, quietLogger(), { journal, fake });
    const run = (...argv: string[]) => cyborg(...argv, '--url', r!.url);
    const gpu = r.conductor.listAccelerators().find((a) => a.deviceType === 'GPU')!;
    await r.conductor.act(gpu.id, { type: 'ENABLE' });
    await r.conductor.attach(gpu.id, { instanceUuid: 'vm-stuck' });

    const online = await run('host', 'delete', 'gone-host');
    expect(online.code).not.toBe(0);
    expect(online.stderr).toMatch(/host gone-host is online: only a host whose agent is lost can be deleted.*\[host\.in_service\]/);

    // The agent dies for good; the conductor's liveness machine calls the host lost.
    await r.agent.stop();
    await eventually(() => r!.conductor.getHost('gone-host').state === 'lost', { what: 'the host lost' });
    const holding = await run('host', 'delete', 'gone-host');
    expect(holding.stderr).toMatch(/still holds instances \(gone-host_fake_gpu_40: vm-stuck\): release them/);
    expect(r.conductor.listHosts().map((h) => h.name)).toContain('gone-host');

    expect(r.conductor.getAccelerator(gpu.id).state).toBe('offline');
    expect((await run('accelerator', 'release', gpu.name, '--instance', 'vm-stuck')).code).toBe(0);
    expect(r.conductor.getAccelerator(gpu.id).allocations).toEqual([]);
    const deleted = await run('host', 'delete', 'gone-host');
    expect([deleted.code, deleted.stdout]).toEqual([0, 'host gone-host deleted; 2 accelerator(s) removed\n']);
    expect(r.conductor.listHosts().map((h) => h.name)).not.toContain('gone-host');
    expect((await r.app.inject({ method: 'GET', url: '/cyborg/v1/hosts/gone-host' })).statusCode).toBe(404);
    expect(await (await fetch(`${r.url}/metrics`)).text()).not.toContain('host="gone-host"');
    expect(journal.hosts.has('gone-host')).toBe(false);
    expect(journal.transitions.find((t) => t.kind === 'host' && t.event === 'DELETE')).toMatchObject({
      id: 'gone-host',
      from: 'lost',
      to: 'deleted',
      actor: 'cli',
    });
  });

  it("with the api apart from the conductor: retired by the host's conductor over the control protocol, and gone from every api's view", async () => {
    await r?.stop();
    const config = loadConfig(
      {
        host: 'gone-2',
        listen: { address: '127.0.0.1', port: 0 },
        logLevel: 'silent',
        logPretty: false,
        api: { operatorRateLimit: 0 },
        timing: { heartbeatIntervalMs: 50, staleAfterMs: 300, lostAfterMs: 600 },
      },
      {},
    );
    const journal = new MemoryJournal();
    r = await startAllInOne(config, quietLogger(), { journal, fake: new FakeDriver({ host: 'gone-2', gpus: 1, nics: 0 }) });
    const publisher = new ViewPublisher(r.bus, r.conductor, 'c1');
    const stopServing = serveControlPlane({ bus: r.bus, conductor: r.conductor, conductorId: 'c1', publisher, timeoutMs: 5_000, log: quietLogger() });
    const apis = [new RemoteControlPlane(r.bus, quietLogger(), 5_000), new RemoteControlPlane(r.bus, quietLogger(), 5_000)];
    try {
      for (const api of apis) await api.start();
      await eventually(() => apis.every((api) => api.listAccelerators({ host: 'gone-2' }).length === 2), { what: 'both apis to see the host' });
      await r.agent.stop();
      await eventually(() => apis.every((api) => api.getHost('gone-2').state === 'lost'), { what: 'the host lost in both views' });
      const retired = await apis[0]!.retireHost('gone-2', { actor: 'ops-carol' });
      expect(retired).toMatchObject({ host: 'gone-2' });
      expect(retired.accelerators).toHaveLength(2);
      // The other api learns it from the published views alone.
      await eventually(() => apis.every((api) => !api.listHosts().some((h) => h.name === 'gone-2') && api.listAccelerators({ host: 'gone-2' }).length === 0), {
        what: 'the host gone from both views',
      });
      expect(journal.hosts.has('gone-2')).toBe(false);
      expect(journal.transitions.find((t) => t.kind === 'host' && t.event === 'DELETE')).toMatchObject({ id: 'gone-2', actor: 'ops-carol' });
      await expect(apis[1]!.retireHost('gone-2')).rejects.toMatchObject({ code: 'host.not_found' });
    } finally {
      for (const api of apis) api.stop();
      stopServing();
      publisher.stop();
    }
  });
});
