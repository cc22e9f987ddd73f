import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthMessage } from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { svc } from '../services.js';
import { Deployment } from './deployment.js';
import type { RoleProcess } from './helpers.js';

/**
 * Health reports with two conductors: an agent's reports reach whichever conductor of the queue
 * group NATS picks, and only the one holding the host's lease may judge them. Every report must
 * get there — forwarded when the other one hears it, and tried again when its holder has just
 * died — or a device that should be quarantined stays in service. A device here is quarantined
 * after exactly 20 bad checks, so a single lost report shows.
 */
const ENTER_AFTER = 20;

describe.skipIf(!svc.nats || !svc.postgres)('health reports with two conductors', { timeout: 300_000 }, () => {
  let dep: Deployment;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const conductors = new Map<string, RoleProcess>();
  const env = { CYBORG_HEALTH_ENTER_AFTER: String(ENTER_AFTER), CYBORG_HEALTH_INTERVAL_MS: '0' };

  beforeAll(async () => {
    db = await freshDatabase('nats_health_routing');
    dep = new Deployment(svc.nats!, db.url);
    conductors.set('conductor-1', await dep.conductor('conductor-1', env));
    conductors.set('conductor-2', await dep.conductor('conductor-2', env));
    await dep.agent('node-h', env);
  }, 240_000);
  afterAll(async () => {
    await dep?.stop();
    await db?.drop();
  });

  /** What the agent of node-h sends: one bad check of one device per message. */
  const badChecks = (deployableUuid: string, n: number): void => {
    for (let i = 0; i < n; i++) {
      dep.bus!.publish(Subjects.report('health', 'node-h'), HealthMessage, {
        host: 'node-h',
        agentId: 'agent-node-h',
        at: Date.now(),
        checks: [{ deployableUuid, healthy: false, severity: 'transient', reason: `ECC burst ${i + 1}` }],
      });
    }
  };

  it("judges every report at the host's holder, whichever conductor heard it, and across the holder's death", async () => {
    dep.logsOnFailure();
    const api = await dep.api();
    await eventually(() => api.listAccelerators({ host: 'node-h' }).length === 2, { what: 'node-h accelerators' });
    const [fpga, gpu] = [...api.listAccelerators({ host: 'node-h' })].sort((a, b) => a.deviceType.localeCompare(b.deviceType));

    // About half of these land on the conductor that does not hold node-h: none may be lost.
    badChecks(gpu!.id, ENTER_AFTER);
    await eventually(() => api.getAccelerator(gpu!.id).health?.status === 'quarantined', {
      what: `the GPU quarantined after ${ENTER_AFTER} bad checks`,
      timeoutMs: 20_000,
    });
    expect(api.getAccelerator(gpu!.id).health?.reason).toMatch(/^ECC burst/);
    expect(api.getAccelerator(fpga!.id).health?.status ?? 'ok').toBe('ok');

    // The holder dies; reports sent before its lease expires are kept trying by the survivor.
    const owner = await eventually(
      async () => {
        for (const id of conductors.keys()) if ((await dep.stats('conductor', id).catch(() => undefined))?.ownedHosts === 1) return id;
        return undefined;
      },
      { what: 'the conductor holding node-h' },
    );
    const survivor = [...conductors.keys()].find((id) => id !== owner)!;
    await conductors.get(owner)!.kill('SIGKILL');
    // Once NATS has closed the dead one's connection (a report already handed to it died with it:
    // core NATS delivers at most once), every report reaches the survivor, which holds none yet.
    await new Promise((r) => setTimeout(r, 300));
    expect((await dep.stats('conductor', survivor)).ownedHosts).toBe(0);
    badChecks(fpga!.id, ENTER_AFTER);
    await eventually(async () => (await dep.stats('conductor', survivor)).ownedHosts === 1, { what: 'the survivor holds node-h', timeoutMs: 60_000 });
    await eventually(() => api.getAccelerator(fpga!.id).health?.status === 'quarantined', { what: 'the FPGA quarantined by the survivor', timeoutMs: 30_000 });
    // The quarantine judged before the death was committed: the survivor rebuilt it.
    expect(api.getAccelerator(gpu!.id).health?.status).toBe('quarantined');
    expect(conductors.get(survivor)!.lines.some((l) => l.msg === 'no conductor took a report for the host: dropped')).toBe(false);
  });
});
