/**
 * Issue 42: the alerts led nowhere — the runbook the alert named printed no health, no card was
 * named but by uuid, a card left in `error` paged nobody. The operator's whole story, from a
 * card's death under an instance to its replacement, against a real Prometheus (Debian's
 * `prometheus`) scraping the all-in-one and evaluating the shipped rules (their `for:` cut to a
 * second, the scrape and evaluation to a second): alert → show → drain → release → replace →
 * enable → back in service, each alert firing and clearing, each CLI step naming the card.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import type { AcceleratorView } from '../../model/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { cyborg } from '../cli/harness.js';
import { freePort } from '../support/ports.js';

const prometheus = spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;
const required = process.env.CI === 'true';
const SKIPPED = " (skipped: Debian's prometheus is not installed; apt-get install prometheus, as CI does)";
const HOST = 'story-host';
const VM = '0c9e4f7a-6b1d-4e2a-9c3f-5d8e7a6b4c21';
const PROJECT = 'render-farm';
const rules = new URL('../../deploy/prometheus/cyborg-alerts.yml', import.meta.url).pathname;

interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

describe.skipIf(!prometheus && !required)(`from a card's death to its replacement, paged by the shipped alerts${prometheus ? '' : SKIPPED}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-story-'));
  let running: Running;
  let fake: FakeDriver;
  let prom: ChildProcess;
  let promUrl = '';
  let dead: AcceleratorView;
  let spare: AcceleratorView;
  let shelf = '';

  beforeAll(async () => {
    const config = loadConfig(
      {
        host: HOST,
        listen: { address: '127.0.0.1', port: 0 },
        logLevel: 'silent',
        logPretty: false,
        timing: { healthIntervalMs: 0, discoveryIntervalMs: 3_600_000 },
      },
      {},
    );
    fake = new FakeDriver({ host: HOST, gpus: 2 });
    const gpus = (await fake.discover()).filter((d) => d.type === 'GPU');
    // The spare is on the shelf: not in the host until the dead card is swapped for it.
    shelf = gpus[1]!.uuid;
    fake.unplug(shelf);
    running = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal(), fake, drivers: [] });
    dead = running.conductor.listAccelerators({ type: 'GPU' })[0]!;
    // Prometheus as the operator runs it, faster: the shipped rules with their waits cut.
    writeFileSync(join(dir, 'rules.yml'), readFileSync(rules, 'utf8').replace(/^(\s+)for: \S+$/gm, '$1for: 1s'));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [rules.yml]
scrape_configs:
  - job_name: cyborg-all-in-one
    static_configs: [{ targets: ['${new URL(running.url).host}'] }]
`,
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prom = spawn(
      'prometheus',
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      {
        stdio: 'ignore',
      },
    );
    await vi.waitFor(
      async () => {
        if ((await fetch(`${promUrl}/-/ready`)).status !== 200) throw new Error('prometheus is not ready');
      },
      { timeout: 30_000, interval: 250 },
    );
  }, 60_000);

  afterAll(async () => {
    prom?.kill('SIGTERM');
    await running?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A field of `accelerator show`'s table (`│ health │ quarantined (fatal) │`). */
  const field = (out: string, key: string) => new RegExp(`│ ${key}\\s+│ (.*?)\\s+│`).exec(out)?.[1];
  const cli = async (...argv: string[]) => cyborg(...argv, '--url', running.url);
  const alerts = async (): Promise<Alert[]> => ((await (await fetch(`${promUrl}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } }).data.alerts;
  const firing = async (name: string, card: string) =>
    (await alerts()).filter((a) => a.labels.alertname === name && a.labels.name === card && a.state === 'firing').map((a) => a.labels);
  const fires = (name: string, card: string) => expect.poll(() => firing(name, card), { timeout: 30_000, interval: 500 }).not.toEqual([]);
  const clears = (name: string, card: string) => expect.poll(() => firing(name, card), { timeout: 30_000, interval: 500 }).toEqual([]);

  it('alert → show → drain → release → replace → enable → back in service', async () => {
    // In service: enabled and under an instance.
    expect((await cli('accelerator', 'enable', dead.id)).code).toBe(0);
    const attach = await cli('accelerator', 'attach', dead.id, '--instance', VM, '--project', PROJECT);
    expect(attach.code).toBe(0);

    // It dies: a fatal Xid. The page names the card by host, name and uuid, and says fatal.
    expect((await cli('fake', 'fault', dead.id, 'fatal', '--reason', 'Xid 79: GPU has fallen off the bus')).code).toBe(0);
    await fires('CyborgQuarantinedDeviceHeld', dead.name);
    const [page] = await firing('CyborgQuarantinedDeviceHeld', dead.name);
    expect(page).toMatchObject({ host: HOST, accelerator: dead.id, severity: 'critical', health_severity: 'fatal', reason_class: 'xid' });
    await fires('CyborgDeviceQuarantined', dead.name);

    // The runbook the alert names: show says what, why and who.
    const show = await cli('accelerator', 'show', dead.id);
    expect(show.code).toBe(0);
    expect(field(show.stdout, 'name')).toBe(dead.name);
    expect(field(show.stdout, 'host')).toBe(HOST);
    expect(field(show.stdout, 'health')).toBe('quarantined (fatal)');
    expect(field(show.stdout, 'health reason')).toBe('Xid 79: GPU has fallen off the bus');
    expect(field(show.stdout, 'held by')).toBe(`instance ${VM} of project ${PROJECT}`);
    expect((await cli('accelerator', 'list')).stdout).toMatch(new RegExp(`${dead.name}.*quarantined`));

    // Drain the host: nothing new lands on it; the instance is still there.
    const drain = await cli('host', 'drain', HOST);
    expect(drain.code).toBe(0);
    expect(drain.stdout).toContain(HOST);

    // Its detach fails on the dead card: it is left in error, and that pages too.
    fake.injectFailure('detach', 'GPU has fallen off the bus');
    const detach = await cli('accelerator', 'detach', dead.id, '--instance', VM);
    expect(detach.code).not.toBe(0);
    await fires('CyborgAcceleratorInError', dead.name);
    expect((await firing('CyborgAcceleratorInError', dead.name))[0]).toMatchObject({ host: HOST, accelerator: dead.id, op: 'detach' });

    // Release the instance from the card without the driver: nothing holds the dead card any more.
    const release = await cli('accelerator', 'release', dead.id, '--instance', VM);
    expect(release.code).toBe(0);
    expect(release.stdout).toContain(`${dead.name}: ${VM} released`);
    await clears('CyborgQuarantinedDeviceHeld', dead.name);

    // Replace it: remove the dead card from Cyborg's books, swap it for the spare in the host.
    const remove = await cli('accelerator', 'remove', dead.id);
    expect([remove.code, remove.stderr]).toEqual([0, '']);
    expect(remove.stdout).toContain(dead.name);
    fake.unplug(dead.deviceUuid);
    fake.unplug(shelf, false);
    await running.agent.discoverAndReport();
    const inHost = () => running.conductor.listAccelerators({ type: 'GPU' }).filter((a) => a.state !== 'removed');
    await expect.poll(() => inHost().map((a) => a.id)).not.toContain(dead.id);
    spare = inHost()[0]!;
    expect(spare.id).not.toBe(dead.id);
    await clears('CyborgDeviceQuarantined', dead.name);
    await clears('CyborgAcceleratorInError', dead.name);

    // Lift the drain, enable the new card, give the instance its GPU back.
    expect((await cli('host', 'drain', HOST, '--cancel')).code).toBe(0);
    const enable = await cli('accelerator', 'enable', spare.id);
    expect(enable.code).toBe(0);
    expect(enable.stdout).toContain(spare.name);
    expect((await cli('accelerator', 'attach', spare.id, '--instance', VM, '--project', PROJECT)).code).toBe(0);

    // Back in service: healthy, held, and no alert about either card.
    const back = await cli('accelerator', 'show', spare.id);
    expect(field(back.stdout, 'health')).toBe('ok');
    expect(field(back.stdout, 'state')).toBe('attached');
    expect(field(back.stdout, 'held by')).toBe(`instance ${VM} of project ${PROJECT}`);
    const left = (await alerts()).filter((a) => a.labels.alertname !== 'CyborgNoConductor');
    expect(left.filter((a) => a.labels.name === spare.name || a.labels.name === dead.name)).toEqual([]);
  }, 240_000);
});
