import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveControlPlane, ViewPublisher } from '../../control/responder.js';
import { RemoteControlPlane } from '../../control/client.js';
import { buildApi } from '../../api/server.js';
import { CyborgError } from '../../errors/index.js';
import { captureLogger } from '../support/log.js';
import { startGenericHost } from './harness.js';

/** The api role apart from the conductor: the driver commands reach the conductor's DriverAdmin over the bus. */
describe('driver administration from an api process', () => {
  let h: Awaited<ReturnType<typeof startGenericHost>>;
  let remote: RemoteControlPlane;
  let stopServing: () => void;
  let publisher: ViewPublisher;

  beforeEach(async () => {
    h = await startGenericHost('remote-host');
    const { log } = captureLogger();
    publisher = new ViewPublisher(h.bus, h.conductor, 'c1');
    stopServing = serveControlPlane({ bus: h.bus, conductor: h.conductor, conductorId: 'c1', publisher, timeoutMs: 10_000, log });
    remote = new RemoteControlPlane(h.bus, log);
    await remote.start();
  });
  afterEach(async () => {
    remote.stop();
    stopServing();
    publisher.stop();
    await h.stop();
  });

  it('lists, changes and refuses as the conductor does, with the same error codes', async () => {
    expect((await remote.driverAdmin.listDrivers()).map((d) => `${d.name}@${d.host} ${d.state}`)).toEqual([
      'fake@remote-host installed',
      'generic@remote-host installed',
    ]);
    const err = await remote.driverAdmin.installDriver('nvidia', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CyborgError);
    expect((err as CyborgError).code).toBe('driver.not_found');
    await expect(remote.driverAdmin.uninstallDriver('generic@remote-host', {})).resolves.toMatchObject({ state: 'uninstalled' });
    expect(h.conductor.driverAdmin.getDriver('generic').state).toBe('uninstalled');
  });

  it("serves the driver routes in the api role's HTTP app", async () => {
    const app = await buildApi({ control: remote, log: captureLogger().log });
    try {
      const res = await app.inject({ method: 'POST', url: '/cyborg/v1/services/discover', payload: {} });
      expect(res.statusCode).toBe(200);
      expect((res.json() as { services: unknown[] }).services).toHaveLength(6);
      const list = await app.inject({ method: 'GET', url: '/cyborg/v1/drivers?host=remote-host' });
      expect((list.json() as { drivers: { name: string }[] }).drivers.map((d) => d.name)).toEqual(['fake', 'generic']);
    } finally {
      await app.close();
    }
  });
});
