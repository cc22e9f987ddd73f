import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { svc } from '../services.js';
import { captureLogger } from '../support/log.js';
import { deleteTree, placementClient, uniqueHost } from './harness.js';
import { eventually } from '../support/eventually.js';
import { placementEnvFor } from '../keystone/placement-auth.js';

interface Listed {
  accelerators: { name: string; placement?: { status: string } }[];
}

/** `cyborg all-in-one` with and without PLACEMENT_URL, as an operator starts it. */
describe('all-in-one and Placement', () => {
  let r: Running | undefined;
  afterEach(async () => {
    await r?.stop();
    r = undefined;
  });

  it('says once that no Placement is configured, and shows no sync state', async () => {
    const { log, lines } = captureLogger();
    r = await startAllInOne(loadConfig({ host: uniqueHost('aio'), listen: { port: 0 } }, {}), log, { journal: new MemoryJournal() });
    const body = (await (await fetch(`${r.url}/cyborg/v1/accelerators`)).json()) as Listed;
    expect(body.accelerators.length).toBeGreaterThan(0);
    expect(body.accelerators.every((a) => a.placement === undefined)).toBe(true);
    expect(lines.filter((l) => String(l.msg).startsWith('no Placement configured'))).toHaveLength(1);
  });

  it.skipIf(!svc.placement)("creates the host's root provider itself and reports every accelerator in sync", async () => {
    const host = uniqueHost('aio');
    r = await startAllInOne(
      loadConfig({ host, listen: { port: 0 } }, { PLACEMENT_URL: svc.placement!, ...placementEnvFor(svc.placement!) }),
      captureLogger().log,
      { journal: new MemoryJournal() },
    );
    await eventually(
      async () => {
        const body = (await (await fetch(`${r!.url}/cyborg/v1/accelerators`)).json()) as Listed;
        return body.accelerators.every((a) => a.placement?.status === 'in_sync');
      },
      { what: 'all in sync', timeoutMs: 30_000 },
    );
    const client = placementClient(svc.placement!);
    expect(await client.providersByName(host)).toHaveLength(1);
    await r.stop();
    await deleteTree(client, host);
  });
});
