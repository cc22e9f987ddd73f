import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { vi, type MockInstance } from 'vitest';
import type { AcceleratorView } from '../../model/index.js';
import { PlacementClient } from '../../openstack/placement/client.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { startStack, type Stack, type StackOptions } from '../support/stack.js';

/** Debian's python3, the one that sees python3-nova and Cyborg's python3-oslo.* (not a python3 earlier on the PATH). */
export const PYTHON = '/usr/bin/python3';
export const novaInstalled = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import nova.accelerator.cyborg'], { stdio: 'ignore' }).status === 0;

/**
 * Runs one of the Nova client scripts beside this file (nova_calls.py, nova_binds.py) and returns
 * what it printed as JSON. Not spawnSync: the API answering it may run in this process.
 */
export async function novaScript<T>(script: string, endpoint: string, plan: unknown): Promise<T> {
  const out = await promisify(execFile)(PYTHON, [join(import.meta.dirname, script), endpoint, JSON.stringify(plan)], { encoding: 'utf8', timeout: 90_000 });
  return JSON.parse(out.stdout) as T;
}

/** Rows of our (target) PostgreSQL database. */
export async function targetRows(url: string, sql: string): Promise<Record<string, any>[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

/** What nova_calls.py answers: Nova's reads, teardown and a new bind on adopted ARQs. */
export interface NovaCalls {
  calls: number;
  list: Record<string, unknown>[];
  by_uuid: Record<string, unknown>[];
  delete_before: string[];
  delete_after: string[];
  bound: Record<string, unknown>[];
}

export type PlacementWrites = Record<'creates' | 'deletes' | 'inventories' | 'traits' | 'allocations', number>;

const WRITES: Record<keyof PlacementWrites, (keyof PlacementClient)[]> = {
  creates: ['createProvider'],
  deletes: ['deleteProvider'],
  inventories: ['putInventories'],
  traits: ['putTraits'],
  allocations: ['putAllocations', 'deleteAllocations', 'releaseProvider'],
};

export interface CutOver {
  stack: Stack;
  /** The host's accelerators once each reconciled with Placement after the first report. */
  accelerators: AcceleratorView[];
  /** Placement writes our roles made since they started: providers created and deleted, inventories, traits and allocations written. */
  writes(): PlacementWrites;
  stop(): Promise<void>;
}

/**
 * Our roles started on an adopted database: the conductor (reading the journal the adoption
 * wrote), an agent of `host` with the fake driver (Cyborg's fake device) or the drivers given, and the API, against the
 * real Placement. Resolves once the agent's first report came and every accelerator of the host
 * (`expected` of them) reconciled with Placement after it; every provider create and delete from
 * then on is counted.
 */
export async function cutOver(host: string, targetUrl: string, opts: { expected?: number; drivers?: StackOptions['drivers'] } = {}): Promise<CutOver> {
  const expected = opts.expected ?? 1;
  const spies = Object.entries(WRITES).map(([kind, methods]) => ({
    kind: kind as keyof PlacementWrites,
    spies: methods.map((m): MockInstance => vi.spyOn(PlacementClient.prototype, m as 'createProvider')),
  }));
  const writes = (): PlacementWrites => Object.fromEntries(spies.map((k) => [k.kind, k.spies.reduce((n, s) => n + s.mock.calls.length, 0)])) as PlacementWrites;
  const stack = await startStack({
    hosts: [host],
    fake: { gpus: 0, nics: 0 },
    ...(opts.drivers ? { drivers: opts.drivers } : {}),
    journal: { databaseUrl: targetUrl },
    placement: { url: svc.placement!, createRoots: false },
    api: true,
  });
  const stop = async (): Promise<void> => {
    await stack.stop();
    for (const k of spies) for (const s of k.spies) s.mockRestore();
  };
  try {
    await eventually(() => stack.conductor.getHost(host).drivers.length > 0, { what: "the agent's first report" });
    const reported = Date.now();
    const accelerators = await eventually(
      () => {
        const accs = stack.conductor.listAccelerators({ host });
        const synced = accs.every((a) => {
          const s = stack.sync.status(a.id);
          return s?.status === 'in_sync' && Date.parse(s.syncedAt ?? '') >= reported;
        });
        return accs.length === expected && synced ? accs : undefined;
      },
      { what: 'the adopted accelerators reconciled with Placement', timeoutMs: 60_000 },
    );
    return { stack, accelerators, writes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
