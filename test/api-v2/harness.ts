import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Logger } from 'pino';
import type { Conductor } from '../../actors/conductor/index.js';
import type { Journal } from '../../actors/runtime/index.js';
import type { V2Settings } from '../../api/v2/index.js';
import type { FakeDriver } from '../../drivers/fake/index.js';
import { NAMESPACE_DNS, uuid3 } from '../../ids/index.js';
import { quietLogger } from '../support/log.js';
import { startStack } from '../support/stack.js';

/** Cyborg's API over the real runtime: conductor + one agent per host (fake driver) + the app. */
export interface Cyborg {
  app: FastifyInstance;
  conductor: Conductor;
  journal: Journal;
  fakes: FakeDriver[];
  /** `<host>_FakeDevice`'s resource provider uuid: uuid3(DNS, name), as Placement knows it. */
  rpOf(host: string): string;
  call(
    method: InjectOptions['method'],
    url: string,
    opts?: { headers?: Record<string, string>; body?: unknown; raw?: string },
  ): Promise<LightMyRequestResponse>;
  stop(): Promise<void>;
}

export const timing = { driverOpTimeoutMs: 5_000, staleAfterMs: 600_000, lostAfterMs: 1_200_000, heartbeatIntervalMs: 600_000 };

/** Personas as Keystone headers (noauth trusts them). */
export const persona = {
  admin: { 'x-roles': 'admin,member,reader', 'x-project-id': 'demo-project', 'x-user-id': 'admin-user' },
  manager: { 'x-roles': 'manager', 'x-project-id': 'demo-project', 'x-user-id': 'manager-user' },
  member: { 'x-roles': 'member', 'x-project-id': 'demo-project', 'x-user-id': 'member-user' },
  reader: { 'x-roles': 'reader', 'x-project-id': 'demo-project', 'x-user-id': 'reader-user' },
  service: { 'x-roles': 'service', 'x-project-id': 'service-project', 'x-user-id': 'nova', 'x-service-roles': 'service' },
  noroles: { 'x-roles': '', 'x-project-id': 'demo-project', 'x-user-id': 'nobody' },
  otherMember: { 'x-roles': 'member', 'x-project-id': 'other-project', 'x-user-id': 'other-user' },
  system: { 'x-roles': 'admin', 'openstack-system-scope': 'all', 'x-user-id': 'system-admin' },
} as const;

export type Persona = keyof typeof persona;

export async function startCyborg(opts: { hosts?: string[]; v2?: V2Settings; journal?: Journal; log?: Logger } = {}): Promise<Cyborg> {
  const stack = await startStack({
    hosts: opts.hosts ?? ['cyborg-host1'],
    journal: opts.journal,
    log: opts.log ?? quietLogger(),
    timing,
    agent: { telemetryIntervalMs: 0 },
    api: { v2: opts.v2 },
  });
  const { app } = stack;
  return {
    app,
    conductor: stack.conductor,
    journal: stack.journal,
    fakes: stack.fakes,
    rpOf: (host) => uuid3(NAMESPACE_DNS, `${host}_FakeDevice`),
    call: (method, url, o = {}) =>
      app.inject({
        method,
        url,
        headers: { ...(o.body !== undefined || o.raw !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
        ...(o.raw !== undefined ? { payload: o.raw } : o.body !== undefined ? { payload: JSON.stringify(o.body) } : {}),
      }),
    stop: () => stack.stop(),
  };
}

/** Cyborg's error text: the faultstring inside `error_message`. */
/** A JSON call on the app as an OpenStack client makes it: the persona's headers, a body when given. */
export function callJson(app: FastifyInstance, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, body?: unknown) {
  return app.inject({
    method,
    url,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

export function fault(res: LightMyRequestResponse): string {
  const body = res.json<{ error_message: string }>();
  const inner = JSON.parse(body.error_message) as { faultstring?: string; description?: string };
  return inner.faultstring ?? inner.description ?? '';
}

/** The tempest device profile: schedules onto the fake driver's FPGA. */
export const FAKE_PROFILE = { 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' };

/** Enables every device (installs their accelerators), as an operator does before Nova schedules. */
export async function enableAll(c: Cyborg): Promise<void> {
  const res = await c.call('GET', '/v2/devices', { headers: persona.admin });
  for (const d of res.json<{ devices: { uuid: string }[] }>().devices) {
    const r = await c.call('POST', `/v2/devices/${d.uuid}/enable`, { headers: persona.admin });
    if (r.statusCode !== 200) throw new Error(`enable ${d.uuid}: ${r.statusCode} ${r.body}`);
  }
}
