/**
 * Issue 42: `nvidia_gpu_driver` enabled on a host without NVIDIA cards said nothing, though the
 * README promises the warning the other drivers give: the warning watched `discover()`, and the
 * agent asks a driver that can discover partially (the NVIDIA one) through `discoverPartial()`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { enabledDrivers } from '../../roles/drivers.js';
import { captureLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';

let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
});

describe('a vendor driver on a host without its cards', () => {
  it.each(['nvidia_gpu_driver', 'intel_qat_driver'])('%s: one warn line naming it at its first discovery', async (driver) => {
    const sysfs = mkdtempSync(join(tmpdir(), 'cyborg-bare-sysfs-'));
    const config = loadConfig({ host: 'bare-host' }, { CYBORG_ENABLED_DRIVERS: driver, CYBORG_GENERIC_SYSFS_ROOT: sysfs });
    const { log, lines } = captureLogger();
    const drivers = enabledDrivers(config, log);
    s = await startStack({ hosts: ['bare-host'], drivers: () => drivers });
    await s.agents[0]!.discoverAndReport();
    const warned = lines.filter((l) => l.level === 40 && /finds nothing to drive/.test(String(l.msg)));
    expect(warned).toEqual([expect.objectContaining({ driver: drivers[0]!.name, sysfsRoot: sysfs })]);
    expect(String(warned[0]!.msg)).toMatch(new RegExp(`^\\[agent\\] enabled_drivers: ${drivers[0]!.name} finds nothing to drive on this host`));
  });
});
