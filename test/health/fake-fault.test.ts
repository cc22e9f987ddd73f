import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { quietLogger } from '../support/log.js';
import { startAllInOne } from '../../roles/all-in-one.js';
import { cyborg, startCliTarget } from '../cli/harness.js';
import { eventually } from '../support/eventually.js';

/**
 * An operator rehearses a quarantine on the all-in-one: `cyborg fake fault` scripts a fault on a
 * fake device, the agent's checks report it and the conductor judges it as it would a real one.
 * A real driver's device is refused, and without the fake driver the route does not exist.
 */
describe('cyborg fake fault on the all-in-one', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  const run = (...argv: string[]) => cyborg(...argv, '--url', target.url);
  const GPU = 'cli-host_fake_gpu_40';
  const REAL = 'cli-host_0000_3b_00_0';

  beforeAll(async () => {
    target = await startCliTarget();
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  const health = (name: string) => target.running.conductor.listAccelerators().find((a) => a.name === name)!.health;

  it("quarantines a fake GPU at once on a fatal fault, and clears it with the operator's clear-health", async () => {
    expect(target.running.conductor.listAccelerators().map((a) => a.name)).toContain(GPU);
    const injected = await run('fake', 'fault', GPU, 'fatal', '--reason', 'Xid 79: GPU has fallen off the bus');
    expect([injected.code, injected.stderr]).toEqual([0, '']);
    expect(injected.stdout).toMatch(new RegExp(`^${GPU} on cli-host: fatal fault injected \\(Xid 79: GPU has fallen off the bus\\)`));
    await eventually(() => health(GPU)?.status === 'quarantined', { what: 'the fake GPU quarantined' });
    expect(health(GPU)).toMatchObject({ fatal: true, reason: 'Xid 79: GPU has fallen off the bus' });

    expect((await run('fake', 'fault', GPU, 'clear')).code).toBe(0);
    expect((await run('accelerator', 'clear-health', GPU)).code).toBe(0);
    expect(health(GPU)?.status ?? 'ok').toBe('ok');
  });

  it("refuses a real driver's device with a 400 naming the field and the driver, and an unknown fault as a usage error", async () => {
    const refused = await run('fake', 'fault', REAL, 'fatal');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/driven by generic, not the fake driver.*field: id.*\[fault\.not_fake_driver\]/);
    expect(health(REAL)?.status ?? 'ok').toBe('ok');
    const typo = await run('fake', 'fault', GPU, 'melted');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('transient, fatal, flapping, clear');
  });

  it('does not exist on an all-in-one without the fake driver', async () => {
    const config = loadConfig(
      { host: 'real-only', listen: { address: '127.0.0.1', port: 0 }, logLevel: 'silent', logPretty: false, agent: { enabledDrivers: [] } },
      {},
    );
    const running = await startAllInOne(config, quietLogger(), { journal: new MemoryJournal() });
    try {
      const res = await running.app.inject({
        method: 'POST',
        url: '/cyborg/v1/accelerators/00000000-0000-4000-8000-000000000000/fake-fault',
        payload: { fault: 'fatal' },
      });
      expect(res.statusCode).toBe(404);
    } finally {
      await running.stop();
    }
  });
});
