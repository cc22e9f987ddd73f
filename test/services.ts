import { existsSync } from 'node:fs';
import { connect } from 'node:net';

/**
 * Which real services the integration tests can reach. `npm test` (test/run.ts) probes them once
 * and passes the answer down; a test that needs a missing one is skipped with the reason, which
 * run.ts prints at the end. Under CI=true a missing service fails the run instead.
 */
export interface Services {
  postgres: string | null;
  nats: string | null;
  placement: string | null;
  /** Keystone's v3 URL (KEYSTONE_URL). */
  keystone: string | null;
  /** Chromium for the visualizer's end-to-end tests: its path, or null. */
  browser: string | null;
}

export const SERVICE_WHY: Record<keyof Services, string> = {
  postgres: 'PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test)',
  nats: 'nats-server (NATS_URL, default nats://127.0.0.1:4222)',
  placement: 'OpenStack Placement (PLACEMENT_URL; .ci/run starts ../shared/peers/placement)',
  keystone: 'OpenStack Keystone (KEYSTONE_URL, default http://127.0.0.1:15001/v3; .ci/run starts ../shared/peers/keystone)',
  browser: 'Chromium for the visualizer e2e tests (CHROMIUM_PATH, default /usr/bin/chromium; scripts/install-browser.sh installs it)',
};

export function defaultUrls(env = process.env): Record<Exclude<keyof Services, 'browser'>, string> {
  return {
    postgres: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    nats: env.NATS_URL ?? 'nats://127.0.0.1:4222',
    placement: env.PLACEMENT_URL ?? 'http://127.0.0.1:8778',
    keystone: env.KEYSTONE_URL ?? 'http://127.0.0.1:15001/v3',
  };
}

function reachable(url: string, timeoutMs = 1500): Promise<boolean> {
  const u = new URL(url);
  const port = Number(u.port) || (u.protocol === 'http:' ? 80 : u.protocol.startsWith('postgres') ? 5432 : 4222);
  return new Promise((resolve) => {
    const sock = connect({ host: u.hostname, port, timeout: timeoutMs });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
    sock.once('timeout', () => {
      sock.destroy();
      resolve(false);
    });
  });
}

export async function probeServices(env = process.env): Promise<Services> {
  const urls = defaultUrls(env);
  const [pg, nats, placement, keystone] = await Promise.all([
    reachable(urls.postgres),
    reachable(urls.nats),
    reachable(urls.placement),
    reachable(urls.keystone),
  ]);
  const browser = env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  return {
    postgres: pg ? urls.postgres : null,
    nats: nats ? urls.nats : null,
    placement: placement ? urls.placement : null,
    keystone: keystone ? urls.keystone : null,
    browser: existsSync(browser) ? browser : null,
  };
}

/** The services as test/run.ts found them (or probed now, when vitest runs on its own). */
export async function services(): Promise<Services> {
  const passed = process.env.CYBORG_TEST_SERVICES;
  if (passed) return JSON.parse(passed) as Services;
  return probeServices();
}

/** Resolved at import: test files use it with `describe.skipIf(!svc.postgres)`. */
export const svc: Services = await services();
