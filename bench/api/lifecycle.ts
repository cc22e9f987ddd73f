/**
 * Nova's calls to the v2 API as the api benches make them: one ARQ lifecycle (create → bind →
 * wait until resolved → delete by instance) and N clients running it for a while. The headers
 * say who asks (a fixed token in noauth mode; Keystone tokens in keystone mode).
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { ArqStates } from '../../machines/index.js';

export type Headers = Record<string, string>;
export const NOAUTH: Headers = { 'x-auth-token': 'admin' };

export function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Requests sent through call() (the keystone section reports Keystone's requests per 1,000 of them). */
export const sent = { requests: 0 };

export async function call(
  pool: Pool,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  headers: Headers = NOAUTH,
): Promise<{ status: number; json: unknown }> {
  sent.requests++;
  const res = await pool.request({
    method,
    path,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
}

/** Milliseconds per step of the cycles, for the breakdown line. */
const steps: Record<'create' | 'bind' | 'resolved' | 'delete', number[]> = { create: [], bind: [], resolved: [], delete: [] };

/** What one cycle was acknowledged for: the fault run checks that none of it is lost. */
export interface CycleAcks {
  /** ARQs whose create was answered 201. */
  created: Set<string>;
  /** ARQs whose delete was answered 204. */
  deleted: Set<string>;
  /** ARQs whose delete was sent, answered or not: one of these may be gone without a 204. */
  deleteSent: Set<string>;
}

/** One Nova boot and delete, as nova-conductor and nova-compute call Cyborg. */
export async function cycle(pool: Pool, host: string, headers: Headers = NOAUTH, acks?: CycleAcks): Promise<void> {
  const instance = randomUUID();
  let t = performance.now();
  const lap = (step: keyof typeof steps): void => {
    const now = performance.now();
    steps[step].push(now - t);
    t = now;
  };
  const created = await call(pool, 'POST', '/v2/accelerator_requests', { device_profile_name: 'bench-dp' }, headers);
  lap('create');
  if (created.status !== 201) throw new Error(`create: ${created.status}`);
  const uuid = (created.json as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  acks?.created.add(uuid);
  const bound = await call(
    pool,
    'PATCH',
    '/v2/accelerator_requests',
    {
      [uuid]: [
        { op: 'add', path: '/hostname', value: host },
        { op: 'add', path: '/device_rp_uuid', value: uuid3(NAMESPACE_DNS, `${host}_FakeDevice`) },
        { op: 'add', path: '/instance_uuid', value: instance },
      ],
    },
    headers,
  );
  if (bound.status !== 202) throw new Error(`bind: ${bound.status}`);
  lap('bind');
  for (;;) {
    const r = await call(pool, 'GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`, undefined, headers);
    if (r.status === 200) {
      const state = (r.json as { arqs: { state: string }[] }).arqs[0]?.state;
      if (state !== ArqStates.Bound) throw new Error(`resolved as ${state}`);
      break;
    }
    if (r.status !== 423) throw new Error(`resolved query: ${r.status}`);
  }
  lap('resolved');
  acks?.deleteSent.add(uuid);
  const deleted = await call(pool, 'DELETE', `/v2/accelerator_requests?instance=${instance}`, undefined, headers);
  if (deleted.status !== 204) throw new Error(`delete: ${deleted.status}`);
  acks?.deleted.add(uuid);
  lap('delete');
}

export function breakdown(): string {
  const out = Object.entries(steps)
    .map(
      ([k, v]) =>
        `${k} ${pct(
          [...v].sort((a, b) => a - b),
          50,
        ).toFixed(1)}`,
    )
    .join(', ');
  for (const v of Object.values(steps)) v.length = 0;
  return `p50 per step (ms): ${out}`;
}

export interface LifecycleResult {
  cycles: number;
  failures: number;
  perS: number;
  p50: number;
  p99: number;
  firstError?: string;
  /** Failures by what they said, most frequent first. */
  errors: [string, number][];
}

/**
 * `clients` clients each running cycles on its host for `seconds`. `onCycle` hears every cycle's
 * end (time, success), for the fault run's recovery times.
 */
export async function lifecycle(
  url: string,
  clients: number,
  hosts: string[],
  seconds: number,
  o: { headers?: Headers; acks?: CycleAcks; onCycle?: (startedAt: number, endedAt: number, ok: boolean) => void } = {},
): Promise<LifecycleResult> {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  const lat: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  const errors = new Map<string, number>();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const host = hosts[i % hosts.length]!;
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await cycle(pool, host, o.headers, o.acks);
          lat.push(performance.now() - t);
          o.onCycle?.(t, performance.now(), true);
        } catch (err) {
          failures++;
          firstError ??= String(err);
          errors.set(String(err), (errors.get(String(err)) ?? 0) + 1);
          o.onCycle?.(t, performance.now(), false);
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  await pool.close();
  lat.sort((a, b) => a - b);
  return {
    cycles: lat.length,
    failures,
    perS: lat.length / elapsed,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    firstError,
    errors: [...errors].sort((a, b) => b[1] - a[1]),
  };
}
