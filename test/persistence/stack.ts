import { loadConfig, type Config } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { createHash } from 'node:crypto';
import { quietLogger } from '../support/log.js';
import { vi } from 'vitest';

export interface StackOptions {
  databaseUrl: string;
  host?: string;
  nics?: number;
  vfsPerNic?: number;
  gpus?: number;
  opDelayMs?: number;
  unavailableAfterMs?: number;
}

/** The all-in-one role exactly as `cyborg all-in-one` wires it, on `databaseUrl`, port 0. */
export function configFor(o: StackOptions): Config {
  return loadConfig(
    {
      host: o.host ?? 'compute-1',
      databaseUrl: o.databaseUrl,
      logLevel: 'silent',
      logPretty: false,
      listen: { address: '127.0.0.1', port: 0 },
      fake: { gpus: o.gpus ?? 2, nics: o.nics ?? 1, vfsPerNic: o.vfsPerNic ?? 4, opDelayMs: o.opDelayMs ?? 0 },
      persistence: { unavailableAfterMs: o.unavailableAfterMs ?? 10_000, pool: 2 },
      // The stories drive thousands of operator writes from one address: the rate limit is not what they test.
      api: { operatorRateLimit: 0 },
    },
    {},
  );
}

export function startStack(o: StackOptions): Promise<Running> {
  return startAllInOne(configFor(o), quietLogger());
}

/**
 * A valid OpenStack request id (`req-<uuid>`) named by a test's label: the API keeps a client's
 * request id only when it is one (api/auth/request-id.ts), and the log records the one it kept.
 */
export function requestIdOf(label: string): string {
  const h = createHash('sha1').update(label).digest('hex');
  return `req-${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** POSTs an operator action through the real HTTP stack (Fastify inject). */
export async function act(
  run: Running,
  id: string,
  action: string,
  requestId: string,
): Promise<{ status: number; body: Record<string, unknown>; retryAfter?: string }> {
  const res = await run.app.inject({
    method: 'POST',
    url: `/cyborg/v1/accelerators/${id}/${action}`,
    payload: {},
    headers: { 'x-openstack-request-id': requestId },
  });
  const retryAfter = res.headers['retry-after'];
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, ...(typeof retryAfter === 'string' ? { retryAfter } : {}) };
}

/** Waits until the conductor has registered the agent's inventory. */
export async function ready(run: Running, accelerators: number): Promise<void> {
  await vi.waitFor(
    () => {
      const seen = run.conductor.listAccelerators().length;
      if (seen < accelerators) throw new Error(`only ${seen} of ${accelerators} accelerators appeared`);
    },
    { timeout: 30_000, interval: 20 },
  );
  await Promise.all(run.conductor.listAccelerators().map((a) => run.conductor.tree.acceleratorActor(a.id).flushed()));
}
