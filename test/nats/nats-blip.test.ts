import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostKey } from '../../actors/cluster/index.js';
import { Deployment, FAST } from './deployment.js';
import { natsServerInstalled, PrivateNats, type RoleProcess } from './helpers.js';
import { eventually } from '../support/eventually.js';

/** Each driver operation of the agent's fake driver runs this long: the blip happens during one. */
const OP_MS = 4_000;
/** The outage: well under the lease TTL. */
const BLIP_MS = Number(FAST.CYBORG_LEASE_TTL_MS) / 4;

/**
 * NATS goes away for less than the conductor's lease TTL while a slow driver operation runs. The
 * conductor keeps its lease (the same record, never re-claimed), keeps its host, and the
 * operation — re-sent with its idempotency key once the agent is reachable again — completes
 * instead of turning the accelerator to `error`.
 */
describe.skipIf(!natsServerInstalled)('a NATS blip shorter than the lease TTL', { timeout: 300_000 }, () => {
  let nats: PrivateNats;
  let dep: Deployment;
  let conductor: RoleProcess;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    dep = new Deployment(nats.url);
    // Transition lines are at debug (the audit log holds every change): this story reads them.
    conductor = await dep.conductor('conductor-b', { LOG_LEVEL: 'debug' });
    await dep.agent('node-b', { CYBORG_FAKE_OP_DELAY_MS: String(OP_MS) });
  }, 180_000);
  afterAll(async () => {
    await dep?.stop();
    await nats?.stop();
  });

  it('keeps the lease and the host, and the driver operation under way completes', async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-b' }).length === 2, { what: 'node-b accelerators' });
    const gpu = api.listAccelerators({ host: 'node-b' }).find((a) => a.deviceType === 'GPU')!;
    const kv = await new Kvm(dep.bus!.nc).open(`${dep.prefix}_cyborg_leases`);
    const held = await eventually(
      async () => {
        const e = await kv.get(hostKey('node-b'));
        return e?.operation === 'PUT' ? { owner: e.json<{ owner: string }>().owner, revision: e.revision } : undefined;
      },
      { what: "node-b's lease recorded" },
    );
    expect(held.owner).toBe('conductor-b');

    // The enable goes out to the agent and runs there for OP_MS; its answer is not awaited here.
    void api.act(gpu.id, { type: 'ENABLE' }).catch(() => undefined);
    await conductor.waitLog((l) => l.msg === 'transition' && l.acceleratorId === gpu.id && l.to === 'installing', 'the enable under way');

    await nats.down();
    await conductor.waitLog((l) => l.msg === 'disconnected from NATS; reconnecting', 'the conductor notices the outage');
    await new Promise((r) => setTimeout(r, BLIP_MS));
    await nats.up();

    await conductor.waitLog((l) => l.msg === 'transition' && l.acceleratorId === gpu.id && l.to === 'ready', 'the enable completed', 60_000);
    expect(conductor.has((l) => l.msg === 'transition' && l.acceleratorId === gpu.id && l.to === 'error')).toBe(false);
    // The lease was never lost: no host let go, none rebuilt, the record the same one.
    expect(conductor.has((l) => l.msg === 'released a host: its lease is no longer ours')).toBe(false);
    expect(conductor.has((l) => l.msg === 'lease lapsed and came back: rebuilding our hosts from the database')).toBe(false);
    const after = await eventually(async () => kv.get(hostKey('node-b')).catch(() => null), { what: 'the lease bucket readable again' });
    expect({ owner: after.json<{ owner: string }>().owner, revision: after.revision }).toEqual(held);
    expect((await dep.stats('conductor', 'conductor-b')).ownedHosts).toBe(1);
    expect(conductor.alive).toBe(true);
  });
});
