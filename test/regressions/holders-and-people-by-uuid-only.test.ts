/**
 * Issue 42: `accelerator show`'s "held by", `accelerator list`, `projects` and `audit` named
 * projects and people by uuid only. Against the real Keystone (api in keystone mode, the log in
 * PostgreSQL): the admin attaches a GPU to an instance of project demo; the CLI, signed in with
 * the admin's token, shows "held by … of project demo (<id>)", a HELD BY column saying demo,
 * `projects` naming demo (and `--project demo` finding it); and a row of the log that kept only
 * the admin's user id (written before names were kept) is found by `audit --user admin` and
 * shown as admin, as Keystone names the id.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeystoneStack, type KeystoneStack } from '../keystone/keystone-stack.js';
import { tokenOf } from '../keystone/peer.js';
import { cyborg } from '../cli/harness.js';
import { svc } from '../services.js';

describe.skipIf(!svc.keystone || !svc.postgres)('holders, projects and people by name (real Keystone, PostgreSQL)', () => {
  let ks: KeystoneStack;
  let admin: Awaited<ReturnType<typeof tokenOf>>;
  let demoId: string;
  const instance = randomUUID();
  const run = (...argv: string[]) => cyborg(...argv, '--url', ks.url, '--os-token', admin.token);

  beforeAll(async () => {
    ks = await startKeystoneStack('surprises_names', { gpus: 1 });
    [admin, { projectId: demoId }] = await Promise.all([tokenOf('admin'), tokenOf('demoReader')]);
  }, 60_000);
  afterAll(async () => {
    await ks?.stop();
  });

  it('show, list and projects name the holding project as Keystone knows it, the id beside', async () => {
    const gpu = ks.stack.conductor.listAccelerators({ type: 'GPU' })[0]!;
    await ks.stack.conductor.act(gpu.id, { type: 'ENABLE' });
    const attached = await ks.app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${gpu.id}/attach`,
      headers: { 'x-auth-token': admin.token },
      payload: { instanceUuid: instance, projectId: demoId },
    });
    expect(attached.statusCode, attached.body).toBe(200);

    const shown = await run('accelerator', 'show', gpu.name);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`instance ${instance} of project demo (${demoId})`);

    const listed = await run('accelerator', 'list');
    expect(listed.stdout).toMatch(/│ IN USE │ HELD BY\s+│/);
    expect(listed.stdout.split('\n').find((l) => l.includes(gpu.name))).toMatch(/│ 1\/\d+\s+│ demo\s+│/);

    const projects = await run('projects');
    expect(projects.stdout).toContain(`demo (${demoId})`);
    const one = await run('projects', '--project', 'demo');
    expect(one.stdout).toContain(`demo (${demoId})`);
    expect(one.stdout).not.toContain('holds no accelerator');
  });

  it('audit --user admin finds a row that kept only the user id, and names it admin', async () => {
    const fpga = ks.stack.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    const requestId = `req-${randomUUID()}`;
    // As a release that kept no names wrote it: the user's and project's ids only.
    await ks.stack.journal.commit([
      {
        type: 'transition',
        record: {
          kind: 'accelerator',
          id: fpga.id,
          host: fpga.host,
          event: 'ENABLE',
          from: 'inactive',
          to: 'installing',
          at: new Date().toISOString(),
          actor: admin.userId,
          projectId: admin.projectId,
          requestId,
        },
      },
    ]);
    const found = await run('audit', '--user', 'admin', '--accelerator', fpga.id, '--json');
    expect(found.code, found.stderr).toBe(0);
    const rows = JSON.parse(found.stdout) as { requestId?: string; actor?: string; actorName?: string; projectName?: string }[];
    expect(rows.map((r) => [r.requestId, r.actor, r.actorName, r.projectName])).toEqual([[requestId, admin.userId, 'admin', 'admin']]);
    const table = await run('audit', '--user', 'admin', '--accelerator', fpga.id);
    expect(table.stdout).toContain(`admin (${admin.userId})`);
    // By project name too; a name Keystone does not know finds nothing.
    expect((await run('audit', '--project', 'admin', '--accelerator', fpga.id)).stdout).toContain(requestId);
    expect((await run('audit', '--user', 'nobody-by-that-name', '--accelerator', fpga.id)).stdout).toContain('Nothing in the audit log matches');
  });
});
