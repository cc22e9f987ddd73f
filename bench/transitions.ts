/**
 * bench/transitions: transitions per second through the actor runtime alone (no database, no
 * bus), with 10,000 accelerator actors, and the heap each actor costs.
 *
 *   npm run bench:transitions            (ACTORS=10000 SECONDS=5 to change the load)
 *
 * For scale it also measures, in the same run, bare XState: the same machine in XState's own
 * actors, with no hosting around it. Our runtime runs the machine on XState too (MachineHost,
 * actors/runtime/machine-host.ts) and adds its bookkeeping (transition records, commit chain, committed
 * views, passivation), so the ratio is what that bookkeeping costs.
 */
import { createActor } from 'xstate';
import { Passivation } from '../actors/runtime/index.js';
import { AcceleratorActor, acceleratorLogic } from '../actors/conductor/index.js';
import type { Change, Journal, Recovered } from '../actors/runtime/index.js';
import { silentLogger } from '../config/index.js';
import { FakeDriver } from '../drivers/index.js';
import { acceleratorMachine, AcceleratorStates } from '../machines/index.js';
import { EventHub, type TransitionRecord } from '../model/index.js';

const ACTORS = Number(process.env.ACTORS ?? 10_000);
const SECONDS = Number(process.env.SECONDS ?? 5);

/** Commits instantly and keeps nothing but a count: the runtime alone, without storage. */
class CountingJournal implements Journal {
  changes = 0;
  async commit(changes: Change[]): Promise<void> {
    this.changes += changes.length;
  }
  async load(): Promise<Recovered> {
    return { hosts: [], accelerators: [], arqs: [], documents: [] };
  }
  async history(): Promise<TransitionRecord[]> {
    return [];
  }
  async close(): Promise<void> {}
}

function heapUsed(): number {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

async function runtime(): Promise<{ perSecond: number; bytesPerActor: number }> {
  const log = silentLogger();
  const journal = new CountingJournal();
  const hub = new EventHub(1000);
  const template = (await new FakeDriver({ host: 'bench' }).discover())[0]!;
  const {
    deployables: [dep],
    ...device
  } = template;
  const logic = acceleratorLogic(async () => ({}), 30_000);
  const before = heapUsed();
  const actors: AcceleratorActor[] = [];
  const runtime = {
    logic,
    journal,
    hub,
    log,
    onCrash: (_a: AcceleratorActor, err: unknown) => {
      throw err;
    },
    passivation: new Passivation(60_000),
  };
  for (let i = 0; i < ACTORS; i++) {
    actors.push(
      new AcceleratorActor({
        spec: { host: `host-${i % 1000}`, device, deployable: { ...dep!, uuid: `acc-${i}`, name: `host-${i % 1000}_dev${i}` } },
        runtime,
      }),
    );
  }
  const bytesPerActor = (heapUsed() - before) / ACTORS;

  let transitions = 0;
  hub.subscribe(() => transitions++);
  const deadline = Date.now() + SECONDS * 1000;
  // Every actor cycles inactive → installing → ready → uninstalling → inactive, all at once.
  const start = Date.now();
  await Promise.all(
    actors.map(async (a) => {
      while (Date.now() < deadline) {
        await a.request({ type: a.state === AcceleratorStates.inactive ? 'ENABLE' : 'DISABLE' });
      }
    }),
  );
  const elapsed = (Date.now() - start) / 1000;
  for (const a of actors) a.stop();
  return { perSecond: transitions / elapsed, bytesPerActor };
}

async function bareXState(): Promise<number> {
  // The driver answers on the next microtask, as acceleratorLogic's effect does with a fast driver.
  const machine = acceleratorMachine.provide({
    actions: {
      runDriverOp: ({ context, self }) => {
        void Promise.resolve().then(() => self.send({ type: 'OP_DONE', seq: context.opSeq ?? 0, output: {} }));
      },
    },
  });
  const actors = Array.from({ length: ACTORS }, (_, i) => createActor(machine, { input: { id: `a${i}`, host: 'h', capacity: 16 } }).start());
  let transitions = 0;
  const deadline = Date.now() + SECONDS * 1000;
  const start = Date.now();
  await Promise.all(
    actors.map(async (a) => {
      while (Date.now() < deadline) {
        const target = a.getSnapshot().value === AcceleratorStates.inactive ? 'ready' : 'inactive';
        a.send({ type: target === 'ready' ? 'ENABLE' : 'DISABLE' });
        await new Promise<void>((resolve) => {
          const sub = a.subscribe((s) => {
            if (s.value === target) {
              sub.unsubscribe();
              resolve();
            }
          });
        });
        transitions += 2;
      }
    }),
  );
  const elapsed = (Date.now() - start) / 1000;
  for (const a of actors) a.stop();
  return transitions / elapsed;
}

if (!globalThis.gc) console.warn('(run through `npm run bench:transitions` so --expose-gc is on; heap figures are noisier without it)');
console.log(`bench/transitions: ${fmt(ACTORS)} accelerator actors, ${SECONDS}s per run, Node ${process.versions.node}`);
const ours = await runtime();
const bare = await bareXState();
console.log(`actor runtime:  ${fmt(ours.perSecond)} transitions/s (each recorded, committed to an in-memory journal, published)`);
console.log(`heap per actor: ${fmt(ours.bytesPerActor)} bytes (${(ours.bytesPerActor / 1024).toFixed(1)} KiB)`);
console.log(`bare XState:    ${fmt(bare)} transitions/s (same machine, no hosting) — runtime/bare = ${(ours.perSecond / bare).toFixed(2)}`);
