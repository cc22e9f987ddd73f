import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { CyborgError, TransitionInvalidError } from '../../errors/index.js';
import { MemoryJournal, type Change, type CommitOptions } from '../../actors/runtime/index.js';
import { acceleratorMachine } from '../../machines/index.js';
import { type Stack, startStack } from '../support/stack.js';
import { eventually } from '../support/eventually.js';

let rt: Stack | undefined;
afterEach(async () => {
  await rt?.stop();
  rt = undefined;
});

const fpgaOf = (r: Stack) => r.conductor.listAccelerators({ type: 'FPGA' })[0]!;

describe('the actor runtime, as an operator drives it', () => {
  it("discovers Cyborg's fake FPGA in inactive, and walks it to attached and back", async () => {
    rt = await startStack();
    const fpga = fpgaOf(rt);
    expect(fpga).toMatchObject({
      name: 'compute-1_FakeDevice',
      state: 'inactive',
      resourceClass: 'FPGA',
      traits: ['CUSTOM_FAKE_DEVICE'],
      capacity: 16,
      allowed: ['ENABLE', 'REMOVE'],
    });
    const c = rt.conductor;
    expect((await c.act(fpga.id, { type: 'ENABLE' })).state).toBe('ready');
    expect((await c.act(fpga.id, { type: 'PROGRAM', bitstreamId: 'bs-1' })).state).toBe('programmed');
    const attached = await c.attach(fpga.id, { instanceUuid: 'vm-1' });
    expect(attached.state).toBe('attached');
    expect(attached.allocations).toHaveLength(1);
    await expect(c.act(fpga.id, { type: 'PROGRAM', bitstreamId: 'bs-2' })).rejects.toMatchObject({ state: 'attached', allowed: ['ATTACH', 'DETACH'] });
    expect((await c.detach(fpga.id, { instanceUuid: 'vm-1' })).state).toBe('programmed');
    const log = await c.history(fpga.id);
    expect(log.map((t) => `${t.from}>${t.to}`)).toEqual([
      'none>inactive',
      'inactive>installing',
      'installing>ready',
      'ready>programming',
      'programming>programmed',
      'programmed>attaching',
      'attaching>attached',
      'attached>detaching',
      'detaching>programmed',
    ]);
    expect(rt.fakes[0]!.calls.map((x) => x.op)).toEqual(['install', 'program', 'attach', 'detach']);
  });

  it('lets exactly one of many racing requests win; the others get the state and allowed events', async () => {
    rt = await startStack();
    rt.fakes[0]!.slowDown('install', 20);
    const id = fpgaOf(rt).id;
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => rt!.conductor.act(id, { type: 'ENABLE' })));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(9);
    for (const l of lost) {
      expect(l.reason).toBeInstanceOf(TransitionInvalidError);
      expect(l.reason).toMatchObject({ state: 'installing', allowed: [] });
    }
    expect(rt.fakes[0]!.calls.filter((x) => x.op === 'install')).toHaveLength(1);
  });

  it("keeps the driver's reason in error, and a retry runs the operation again", async () => {
    rt = await startStack();
    const id = fpgaOf(rt).id;
    rt.fakes[0]!.injectFailure('install', 'firmware rejected the image');
    const failed = await rt.conductor.act(id, { type: 'ENABLE' });
    expect(failed).toMatchObject({ state: 'error', error: { op: 'install', reason: 'firmware rejected the image' }, allowed: ['RETRY', 'REMOVE'] });
    expect((await rt.conductor.act(id, { type: 'RETRY' })).state).toBe('ready');
  });

  it('acknowledges a transition only after the commit that holds it', async () => {
    const gate = new GatedJournal();
    rt = await startStack({ journal: gate });
    const id = fpgaOf(rt).id;
    gate.closeGate();
    let acked = false;
    const p = rt.conductor.act(id, { type: 'ENABLE' }).then((v) => {
      acked = true;
      return v;
    });
    await eventually(() => rt!.conductor.tree.acceleratorActor(id).state === 'ready', { what: 'machine reaches ready', timeoutMs: 5000 });
    await eventually(() => gate.waiting > 0, { what: 'a commit is waiting', timeoutMs: 5000 });
    expect(acked).toBe(false);
    expect(rt.conductor.getAccelerator(id).state).toBe('inactive'); // reads serve the committed view
    gate.openGate();
    expect((await p).state).toBe('ready');
    expect(acked).toBe(true);
  });

  it('an enable answered 503 is not made: memory goes back to what is committed, and the enable can be sent again', async () => {
    const journal = new AwayJournal();
    rt = await startStack({ journal });
    const id = fpgaOf(rt).id;
    journal.away = 2; // the enable's commits (→ installing, and → ready if it gets that far)
    await expect(rt.conductor.act(id, { type: 'ENABLE' })).rejects.toMatchObject({ code: 'persistence.unavailable' });
    await eventually(() => rt!.conductor.tree.acceleratorActor(id).state === 'inactive', { what: 'memory back to the committed state' });
    expect(rt.conductor.getAccelerator(id)).toMatchObject({ state: 'inactive', allowed: expect.arrayContaining(['ENABLE']) });
    expect(journal.accelerators.get(id)?.record.value).toBe('inactive');
    expect((await rt.conductor.history(id)).map((t) => t.to)).toEqual(['inactive']);
    journal.away = 0; // the database is back
    expect((await rt.conductor.act(id, { type: 'ENABLE' })).state).toBe('ready');
    expect((await rt.conductor.history(id)).map((t) => t.to)).toEqual(['inactive', 'installing', 'ready']);
  });

  it('an ARQ whose creation is answered 503 does not exist, and a bind answered 503 leaves it unbound', async () => {
    const journal = new AwayJournal();
    rt = await startStack({ journal });
    const c = rt.conductor;
    journal.away = 1;
    await expect(c.createArq({ deviceProfileName: 'none', deviceProfileGroupId: 0, projectId: null })).rejects.toMatchObject({
      code: 'persistence.unavailable',
    });
    expect(c.arqs.size).toBe(0);
    expect(journal.arqs.size).toBe(0);
    const arq = await c.createArq({ deviceProfileName: 'none', deviceProfileGroupId: 0, projectId: null });
    expect(c.arqs.size).toBe(1);
    const fpga = fpgaOf(rt);
    await c.act(fpga.id, { type: 'ENABLE' });
    journal.away = 1; // the bind is one transaction: BindStarted, attaching, attached, Bound
    await expect(c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).rejects.toMatchObject({
      code: 'persistence.unavailable',
    });
    await eventually(() => c.arqs.get(arq.uuid)?.state === 'Initial' && c.tree.acceleratorActor(fpga.id).context.allocations.length === 0, {
      what: 'ARQ and card back to their committed state',
    });
    expect(journal.arqs.get(arq.uuid)?.record.value).toBe('Initial');
    expect(journal.accelerators.get(fpga.id)?.record.context.allocations).toEqual([]);
    expect((await c.bindArq(arq.uuid, { hostname: 'compute-1', deviceRpUuid: fpga.rpUuid, instanceUuid: 'vm-1' })).state).toBe('Bound');
  });

  it('a report whose new devices are answered 503 is forgotten in memory too, and the next report brings them', async () => {
    const journal = new AwayJournal();
    rt = await startStack({ journal });
    const host = rt.conductor.hosts.get('compute-1')!;
    const before = host.inventory();
    // A device the agent reports for the first time (a clone of one with ids of its own).
    const proto = structuredClone(before[0]!);
    const fresh = {
      ...proto,
      uuid: randomUUID(),
      deployables: proto.deployables.map((d) => ({
        ...d,
        uuid: randomUUID(),
        name: `${d.name}-new`,
        attachHandles: d.attachHandles.map((h) => ({ ...h, uuid: randomUUID() })),
      })),
    };
    const newId = fresh.deployables[0]!.uuid;
    journal.away = 2; // the inventory and the new accelerator's first record
    await expect(host.applyInventory([...before, fresh])).rejects.toMatchObject({ code: 'persistence.unavailable' });
    await eventually(() => !host.accelerators.has(newId), { what: 'the uncommitted accelerator forgotten' });
    expect(host.inventory()).toBe(before);
    expect(journal.accelerators.has(newId)).toBe(false);
    journal.away = 0;
    await host.applyInventory([...before, fresh]);
    expect(host.accelerators.get(newId)?.everCommitted).toBe(true);
    expect(journal.accelerators.get(newId)?.record.value).toBe('inactive');
  });

  it('restarts a crashed accelerator actor from its last committed snapshot, and logs why', async () => {
    let armed = false;
    const real = acceleratorMachine.implementations.guards.isProgrammed as unknown as (...a: unknown[]) => boolean;
    // A bug in a guard that runs while the machine settles after a detach: its actor stops with an error.
    const machine = acceleratorMachine.provide({
      guards: {
        isProgrammed: ((...args: unknown[]) => {
          if (armed) {
            armed = false;
            throw new Error('bug in isProgrammed');
          }
          return real(...args);
        }) as never,
      },
    });
    rt = await startStack({ acceleratorMachine: machine });
    const c = rt.conductor;
    const id = fpgaOf(rt).id;
    await c.act(id, { type: 'ENABLE' });
    await c.act(id, { type: 'PROGRAM', bitstreamId: 'bs-1' });
    await c.attach(id, { instanceUuid: 'vm-1' });
    armed = true;
    await expect(c.detach(id, { instanceUuid: 'vm-1' })).rejects.toThrow('bug in isProgrammed');
    const host = c.hosts.get('compute-1')!;
    await eventually(() => host.restarts.length === 1 && c.tree.acceleratorActor(id).state === 'error', { what: 'restart', timeoutMs: 5000 });
    expect(host.restarts[0]).toMatchObject({ id, reason: 'bug in isProgrammed' });
    expect(rt.lines.some((l) => l.msg === 'accelerator actor crashed; restarting from its last committed snapshot' && l.acceleratorId === id)).toBe(true);
    // Its last committed snapshot was `detaching`: the interrupted detach is an error to retry, the instance still recorded.
    const restarted = await eventually(
      () => {
        const v = c.getAccelerator(id);
        return v.state === 'error' ? v : undefined;
      },
      { what: 'recovery committed', timeoutMs: 5000 },
    );
    expect(restarted).toMatchObject({ error: { op: 'detach', reason: 'interrupted' }, allowed: ['RETRY'] });
    expect(restarted.allocations).toHaveLength(1);
    expect((await c.act(id, { type: 'RETRY' })).state).toBe('programmed');
  });
});

/**
 * A journal whose database is away for the next `n` commits that change something: they are
 * answered 503 and not written, as the PostgreSQL journal does ("503 means not done"), and so is
 * every commit deferred before them (the PostgreSQL journal drops everything that waits).
 */
class AwayJournal extends MemoryJournal {
  away = 0;
  private held: { changes: Change[]; resolve: () => void; reject: (e: unknown) => void }[] = [];

  override async commit(changes: Change[], opts?: CommitOptions): Promise<void> {
    if (opts?.defer)
      return new Promise((resolve, reject) => {
        this.held.push({ changes, resolve, reject });
      });
    const held = this.held;
    this.held = [];
    if (this.away > 0 && changes.length > 0) {
      this.away--;
      const err = new CyborgError('persistence.unavailable', 'the database is unreachable; the change was not made');
      for (const h of held) h.reject(err);
      throw err;
    }
    for (const h of held) {
      await super.commit(h.changes);
      h.resolve();
    }
    return super.commit(changes);
  }
}

/** A journal whose commits wait until the test opens the gate: a database that is slow on purpose. */
class GatedJournal extends MemoryJournal {
  private gate: Promise<void> | null = null;
  private release: (() => void) | null = null;
  waiting = 0;

  closeGate(): void {
    this.gate = new Promise((r) => {
      this.release = r;
    });
  }

  openGate(): void {
    this.release?.();
    this.gate = null;
  }

  override async commit(changes: Change[]): Promise<void> {
    if (this.gate) {
      this.waiting++;
      await this.gate;
      this.waiting--;
    }
    return super.commit(changes);
  }
}
