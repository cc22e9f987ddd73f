import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { RemoteControlPlane } from '../../control/client.js';
import { serveControlPlane, ViewPublisher } from '../../control/responder.js';
import type { AuditEntry } from '../../model/index.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * An api process apart from the conductor: who asked travels in each control call's meta, and the
 * audit is asked of the conductor (control op `audit`), which holds the log.
 */
describe('audit through the control protocol (api role apart from the conductor)', () => {
  let run: Stack;
  let remote: RemoteControlPlane;
  let publisher: ViewPublisher;
  let stopServing: () => void;
  let api: FastifyInstance;

  beforeAll(async () => {
    run = await startStack({ log: quietLogger() });
    publisher = new ViewPublisher(run.bus, run.conductor, 'c1');
    stopServing = serveControlPlane({ bus: run.bus, conductor: run.conductor, conductorId: 'c1', publisher, timeoutMs: 5_000, log: quietLogger() });
    remote = new RemoteControlPlane(run.bus, quietLogger(), 5_000);
    await remote.start();
    api = await buildApi({ control: remote, log: quietLogger() });
  });
  afterAll(async () => {
    await api?.close();
    remote?.stop();
    stopServing?.();
    publisher?.stop();
    await run?.stop();
  });

  it('records the remote caller, project and request id, and answers the audit from the conductor', async () => {
    const fpga = run.conductor.listAccelerators({ type: 'FPGA' })[0]!.id;
    await eventually(
      () => {
        try {
          return remote.getAccelerator(fpga).id === fpga;
        } catch {
          return false;
        }
      },
      { what: 'the api to see the FPGA' },
    );
    const requestId = `req-${randomUUID()}`;
    const res = await api.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${fpga}/enable`,
      headers: { 'x-user-id': 'carol', 'x-project-id': 'proj-c', 'x-openstack-request-id': requestId },
    });
    expect(res.statusCode, res.body).toBe(200);

    const page = await api.inject({ method: 'GET', url: `/cyborg/v1/audit?user=carol&accelerator=${fpga}` });
    expect(page.statusCode, page.body).toBe(200);
    const rows = (page.json() as { audit: AuditEntry[] }).audit;
    expect(rows.map((e) => [e.event, e.to, e.requestId, e.projectId])).toEqual([
      ['done: driver op', 'ready', requestId, 'proj-c'],
      ['ENABLE', 'installing', requestId, 'proj-c'],
    ]);
  });
});
