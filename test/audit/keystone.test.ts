import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import type { AuditEntry } from '../../model/index.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { svc } from '../services.js';
import { freshDatabase } from '../support/database.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { KEYSTONE_URL, serviceAuth, tokenOf } from '../keystone/peer.js';

/**
 * In keystone mode the audit names the caller as Keystone told it: the admin's user and project
 * ids from its validated token, whatever identity headers it adds, and beside them their names,
 * so that `?user=admin` finds the admin's actions (the rows come from PostgreSQL, as in
 * production). A project's reader reads only its own project's rows.
 */
describe.skipIf(!svc.keystone || !svc.postgres)('audit with Keystone identities (real Keystone, PostgreSQL)', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    db = await freshDatabase('audit_ks');
    stack = await startStack({ log: quietLogger(), journal: { databaseUrl: db.url } });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth(), timeoutMs: 10_000 });
    const validator = new TokenValidator({ session, cache: { ttlMs: 300_000 }, timeoutMs: 10_000 });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    });
    await app.ready();
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
    await db?.drop();
  });

  it("records the admin's Keystone user and project ids with the request id; forged headers change nothing", async () => {
    const admin = await tokenOf('admin');
    const reader = await tokenOf('demoReader');
    const fpga = stack.conductor.listAccelerators({ type: 'FPGA' })[0]!.id;
    const requestId = `req-${randomUUID()}`;
    const res = await app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${fpga}/enable`,
      headers: { 'x-auth-token': admin.token, 'x-openstack-request-id': requestId, 'x-user-id': 'mallory', 'x-project-id': 'forged' },
    });
    expect(res.statusCode, res.body).toBe(200);

    const page = await app.inject({ url: `/cyborg/v1/audit?accelerator=${fpga}&action=enable`, headers: { 'x-auth-token': admin.token } });
    expect(page.statusCode, page.body).toBe(200);
    expect((page.json() as { audit: AuditEntry[] }).audit.map((e) => [e.actor, e.actorName, e.projectId, e.projectName, e.requestId])).toEqual([
      [admin.userId, 'admin', admin.projectId, 'admin', requestId],
    ]);
    // A user and a project are found by name as by id.
    for (const q of ['user=admin', `user=${admin.userId}`, 'project=admin', `project=${admin.projectId}`]) {
      const found = await app.inject({ url: `/cyborg/v1/audit?${q}&accelerator=${fpga}`, headers: { 'x-auth-token': admin.token } });
      expect(
        (found.json() as { audit: AuditEntry[] }).audit.map((e) => e.requestId),
        q,
      ).toContain(requestId);
    }
    const nobody = await app.inject({ url: `/cyborg/v1/audit?user=demo-reader&accelerator=${fpga}`, headers: { 'x-auth-token': admin.token } });
    expect((nobody.json() as { audit: AuditEntry[] }).audit).toEqual([]);
    // A reader of project demo reads only the rows of demo's callers: not the admin's.
    const theirs = await app.inject({ url: `/cyborg/v1/audit?accelerator=${fpga}&action=enable`, headers: { 'x-auth-token': reader.token } });
    expect(theirs.statusCode, theirs.body).toBe(200);
    expect((theirs.json() as { audit: AuditEntry[] }).audit).toEqual([]);
    expect((await app.inject({ url: '/cyborg/v1/audit' })).statusCode).toBe(401);
  });
});
