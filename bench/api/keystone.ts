/**
 * bench:api's keystone section: the same calls through two apis on one conductor in one run, one
 * in noauth mode and one in keystone mode validating every token with the real Keystone (its
 * bounded cache keeps Keystone off the hot path), and the ratio keystone / noauth (target >= 0.8).
 * Keystone's load is counted at its source: the validator's requests and the service user's
 * authentications, per 1,000 API requests sent.
 */
import type { Logger } from 'pino';
import { request } from 'undici';
import { buildApi } from '../../api/server.js';
import type { ControlPlane } from '../../model/index.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { breakdown, lifecycle, NOAUTH, sent, type Headers } from './lifecycle.js';

const KEYSTONE_URL = process.env.KEYSTONE_URL ?? 'http://127.0.0.1:15001/v3';
const TARGET_RATIO = 0.8;
/** The Keystone peer's users (../shared/peers/keystone/README.md): KEYSTONE_<USER>_PASSWORD or `<user>-secret`. */
const password = (user: string): string => process.env[`KEYSTONE_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD`] ?? `${user}-secret`;

async function tokenOf(user: string, project: string): Promise<string> {
  const res = await request(`${KEYSTONE_URL}/auth/tokens?nocatalog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: user, domain: { name: 'Default' }, password: password(user) } } },
        scope: { project: { name: project, domain: { name: 'Default' } } },
      },
    }),
  });
  await res.body.dump();
  const token = res.headers['x-subject-token'];
  if (res.statusCode !== 201 || typeof token !== 'string') throw new Error(`Keystone refused ${user}: ${res.statusCode}`);
  return token;
}

export interface KeystoneSectionOptions {
  control: ControlPlane;
  log: Logger;
  noauthUrl: string;
  hosts: string[];
  clients: number;
  seconds: number;
  /** bench:api's `GET /v2/devices` phase (10 connections) with these headers. */
  devices: (url: string, headers: Headers) => Promise<{ perS: number; p99: number; errors: number; total: number }>;
}

export async function keystoneSection(o: KeystoneSectionOptions): Promise<void> {
  // Nova as it calls Cyborg: its own token plus a service token (bind, unbind and delete want one).
  let headers: Headers;
  try {
    headers = { 'x-auth-token': await tokenOf('admin', 'admin'), 'x-service-token': await tokenOf('nova', 'service') };
  } catch (err) {
    console.log(`\nkeystone mode: skipped — Keystone unreachable or refusing at ${KEYSTONE_URL} (${String(err)})`);
    return;
  }
  const session = new KeystoneSession({
    authUrl: KEYSTONE_URL,
    auth: {
      type: 'password',
      username: 'cyborg',
      password: password('cyborg'),
      userDomainName: 'Default',
      projectName: 'service',
      projectDomainName: 'Default',
    },
  });
  const validator = new TokenValidator({ session, cache: {} });
  const app = await buildApi({
    control: o.control,
    log: o.log,
    v2: { authStrategy: 'keystone' },
    auth: { keystone: { validator, wwwAuthenticateUri: KEYSTONE_URL.replace(/\/v3\/?$/, '') } },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  try {
    console.log(`\nkeystone mode (${KEYSTONE_URL}, the validator's default token cache) against noauth, back to back:`);
    const ratio = (k: number, n: number): string => `${(k / n).toFixed(2)} (target >= ${TARGET_RATIO})`;
    // Keystone's load is counted over all keystone-mode requests, the first validations included.
    let s0 = sent.requests;
    // Each mode once before measuring, so that neither pays a first validation or a cold JIT.
    await lifecycle(url, 1, o.hosts, 1, { headers });
    let apiRequests = sent.requests - s0;
    await lifecycle(o.noauthUrl, 1, o.hosts, 1);
    breakdown();
    const noauth = await lifecycle(o.noauthUrl, o.clients, o.hosts, o.seconds, { headers: NOAUTH });
    breakdown();
    s0 = sent.requests;
    const keystone = await lifecycle(url, o.clients, o.hosts, o.seconds, { headers });
    apiRequests += sent.requests - s0;
    breakdown();
    console.log(
      `ARQ lifecycle, ${o.clients} clients: noauth ${noauth.perS.toFixed(1)} cycles/s (${noauth.failures} failed), keystone ${keystone.perS.toFixed(1)} cycles/s (p99 ${keystone.p99.toFixed(1)} ms, ${keystone.failures} failed${keystone.firstError ? `: ${keystone.firstError}` : ''})`,
    );
    console.log(`  keystone / noauth: ${ratio(keystone.perS, noauth.perS)}`);
    const dn = await o.devices(o.noauthUrl, NOAUTH);
    const dk = await o.devices(url, headers);
    console.log(
      `GET /v2/devices, 10 conns: noauth ${dn.perS.toFixed(1)} req/s (${dn.errors} errors), keystone ${dk.perS.toFixed(1)} req/s (p99 ${dk.p99} ms, ${dk.errors} errors)`,
    );
    console.log(`  keystone / noauth: ${ratio(dk.perS, dn.perS)}`);
    const ks = validator.keystoneRequests + session.authentications;
    const total = apiRequests + dk.total;
    console.log(
      `Keystone requests: ${ks} (${validator.keystoneRequests} validations, ${session.authentications} service-user authentications) for ${total} keystone-mode API requests: ${((ks / Math.max(1, total)) * 1000).toFixed(2)} per 1,000`,
    );
  } finally {
    await app.close();
  }
}
