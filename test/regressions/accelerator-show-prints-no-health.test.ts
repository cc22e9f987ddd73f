/**
 * Issue 42: the quarantine alert says "`cyborg accelerator show <uuid>` names the reason", but
 * that command printed no health, reason or mark, and `accelerator list` had no health column.
 * Now show prints health, its reason and since when, the maintenance mark and who holds the card;
 * list has a HEALTH column with the mark beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyborg, startCliTarget } from '../cli/harness.js';
import { eventually } from '../support/eventually.js';

describe('accelerator show and list name health, reason and marks', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  const run = (...argv: string[]) => cyborg(...argv, '--url', target.url);
  const GPU = 'show-host_fake_gpu_40';

  beforeAll(async () => {
    target = await startCliTarget('show-host');
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  it('a quarantined, marked card: show says why and since when, list says quarantined and the mark', async () => {
    expect((await run('fake', 'fault', GPU, 'fatal', '--reason', 'Xid 79: GPU has fallen off the bus')).code).toBe(0);
    const status = () => target.running.conductor.listAccelerators().find((a) => a.name === GPU)!.health?.status;
    await eventually(() => status() === 'quarantined', { what: 'the fake GPU quarantined' });
    expect((await run('accelerator', 'maintenance', GPU)).code).toBe(0);

    const shown = await run('accelerator', 'show', GPU);
    expect(shown.code).toBe(0);
    const field = (name: string): string | undefined => shown.stdout.match(new RegExp(`│ ${name}\\s+│ (.*?)\\s*│`))?.[1];
    expect(field('health')).toBe('quarantined (fatal), maintenance');
    expect(field('health reason')).toBe('Xid 79: GPU has fallen off the bus');
    expect(field('health since')).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(field('maintenance')).toMatch(/^maintenance \(by the device since \d{4}-/);
    expect(field('held by')).toBe('none');

    const listed = await run('accelerator', 'list', '--host', 'show-host');
    expect(listed.stdout).toMatch(/│ STATE\s+│ HEALTH\s+│ IN USE/);
    expect(listed.stdout.split('\n').find((l) => l.includes(GPU))).toContain('quarantined (fatal), maintenance');
  });
});
