import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { startAllInOne } from '../../roles/all-in-one.js';
import { enabledDrivers } from '../../roles/drivers.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';

describe('drivers per role, as the operator enables them', () => {
  it('a production agent loads no fake driver unless [agent] enabled_drivers names it', () => {
    const log = quietLogger();
    expect(enabledDrivers(loadConfig({ host: 'compute-1' }, {}, { role: 'agent' }), log)).toEqual([]);
    const named = enabledDrivers(loadConfig({ host: 'compute-1' }, { CYBORG_ENABLED_DRIVERS: 'fake_driver' }, { role: 'agent' }), log);
    expect(named.map((d) => d.name)).toEqual(['fake']);
  });

  it('the all-in-one brings the fake driver by default', () => {
    expect(enabledDrivers(loadConfig({ host: 'demo' }, {}, { role: 'all-in-one' }), quietLogger()).map((d) => d.name)).toEqual(['fake']);
  });
});

describe('[agent] auto_enable', () => {
  const start = async (autoEnable: boolean) =>
    startAllInOne(
      loadConfig({ host: `auto-${autoEnable}`, listen: { port: 0 }, logLevel: 'silent', logPretty: false, agent: { autoEnable } }, {}, { role: 'all-in-one' }),
      quietLogger(),
      { journal: new MemoryJournal() },
    );

  it('off (the default): newly discovered accelerators wait inactive for an operator', async () => {
    const running = await start(false);
    try {
      const accs = running.conductor.listAccelerators();
      expect(accs.length).toBeGreaterThan(0);
      expect(new Set(accs.map((a) => a.state))).toEqual(new Set(['inactive']));
    } finally {
      await running.stop();
    }
  });

  it('on: every newly discovered accelerator is enabled, ready for Nova, without an operator', async () => {
    const running = await start(true);
    try {
      await eventually(
        () => {
          const accs = running.conductor.listAccelerators();
          return accs.length > 0 && accs.every((a) => a.state === 'ready');
        },
        { what: 'every accelerator ready' },
      );
      const history = await running.conductor.history(running.conductor.listAccelerators()[0]!.id);
      expect(history.find((h) => h.event === 'ENABLE')?.actor).toBe('auto-enable');
    } finally {
      await running.stop();
    }
  });
});
