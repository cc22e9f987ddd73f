/**
 * Issue 42: the alerts and the metrics named a card by uuid only. Every shipped alert about one
 * accelerator now says its name and host in its summary (keeping the uuid for the command it
 * suggests), and every device series the all-in-one exposes carries `host` and `name` beside
 * `accelerator`, equal to what the fleet says of that card. The per-consumer series
 * (`cyborg_accelerator_allocation`, `[conductor] metrics_consumer_labels`) named the people by
 * project id only: in keystone mode, against the real Keystone, it carries `project_name` too
 * (Keystone's name, cached), and a scrape never waits for it — with a Keystone that never
 * answers, the scrape answers at once with the name empty.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { Metrics } from '../../metrics/index.js';
import { KeystoneDirectory, KeystoneSession } from '../../openstack/keystone/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { metricsProjectNames } from '../../roles/project-names.js';
import { startCliTarget } from '../cli/harness.js';
import { KEYSTONE_URL, password, serviceAuth, tokenOf } from '../keystone/peer.js';
import { svc } from '../services.js';

interface Rule {
  alert?: string;
  expr: string;
  annotations?: { summary?: string; description?: string };
}

describe('alerts and metrics name a card by host and name beside its uuid', () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  beforeAll(async () => {
    target = await startCliTarget('names-host');
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  it('each shipped alert about one accelerator says its name and host, and the uuid for its command', async () => {
    const doc = parse(await readFile(new URL('../../deploy/prometheus/cyborg-alerts.yml', import.meta.url), 'utf8')) as { groups: { rules: Rule[] }[] };
    const perCard = doc.groups.flatMap((g) => g.rules).filter((r) => r.alert && /\bby \([^)]*\baccelerator\b/.test(r.expr));
    expect(perCard.map((r) => r.alert)).toEqual(expect.arrayContaining(['CyborgQuarantinedDeviceHeld', 'CyborgDeviceQuarantined', 'CyborgAcceleratorInError']));
    for (const r of perCard) {
      expect(r.expr, r.alert).toMatch(/\bby \([^)]*\bname\b/);
      expect(r.annotations?.summary, r.alert).toMatch(/\{\{ \$labels\.name \}\}.*\{\{ \$labels\.host \}\}/);
      expect(r.annotations?.description, r.alert).toContain('{{ $labels.accelerator }}');
    }
  });

  it("each device series of /metrics carries the card's host and name beside its uuid", async () => {
    const res = await fetch(`${target.url}/metrics`);
    const text = await res.text();
    const cards = new Map(target.running.conductor.listAccelerators().map((a) => [a.id, a]));
    const series = text.split('\n').filter((l) => l.startsWith('cyborg_') && l.includes('accelerator="'));
    expect(series.length).toBeGreaterThan(0);
    for (const line of series) {
      const label = (k: string): string | undefined => line.match(new RegExp(`[{,]${k}="([^"]*)"`))?.[1];
      const card = cards.get(label('accelerator')!);
      expect(card, line).toBeDefined();
      expect([label('host'), label('name')], line).toEqual([card!.host, card!.name]);
    }
  });
});

/** A label of one Prometheus text line. */
const labelOf = (line: string, k: string): string | undefined => line.match(new RegExp(`[{,]${k}="([^"]*)"`))?.[1];

describe.skipIf(!svc.keystone)('the per-consumer series names the project as Keystone does, never waiting for it', () => {
  const HOST = 'names-consumers';
  let run: Running;
  let demoId: string;
  const config = loadConfig(
    {
      host: HOST,
      logLevel: 'silent',
      logPretty: false,
      listen: { address: '127.0.0.1', port: 0 },
      v2: { authStrategy: 'keystone' },
      keystoneAuthtoken: { authUrl: KEYSTONE_URL, username: 'cyborg', password: password('cyborg'), projectName: 'service' },
      conductor: { metricsConsumerLabels: true },
    },
    {},
  );
  const instance = randomUUID();

  beforeAll(async () => {
    run = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal(), fake: new FakeDriver({ host: HOST, gpus: 1 }), drivers: [] });
    const [admin, demo] = await Promise.all([tokenOf('admin'), tokenOf('demoReader')]);
    demoId = demo.projectId;
    const gpu = run.conductor.listAccelerators({ type: 'GPU' })[0]!;
    await run.conductor.act(gpu.id, { type: 'ENABLE' });
    const attached = await run.app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${gpu.id}/attach`,
      headers: { 'x-auth-token': admin.token },
      payload: { instanceUuid: instance, projectId: demoId },
    });
    expect(attached.statusCode, attached.body).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await run?.stop();
  });

  it("the all-in-one's allocation series says project demo by name beside its id", async () => {
    const allocation = async (): Promise<string | undefined> =>
      (await (await fetch(`${run.url}/metrics`)).text()).split('\n').find((l) => l.startsWith('cyborg_accelerator_allocation{') && l.includes(instance));
    // The first scrape may come before Keystone's answer (the name empty then); a later one has it.
    await expect.poll(async () => labelOf((await allocation()) ?? '', 'project_name'), { timeout: 20_000 }).toBe('demo');
    const line = (await allocation())!;
    expect([labelOf(line, 'project'), labelOf(line, 'host')]).toEqual([demoId, HOST]);
  });

  it("a conductor alone names projects with [keystone_authtoken]'s service user; noauth or labels off, no names asked", async () => {
    const named = metricsProjectNames(config)!;
    await expect.poll(() => named(demoId), { timeout: 20_000 }).toBe('demo');
    expect(metricsProjectNames({ ...config, v2: { ...config.v2, authStrategy: 'noauth' } })).toBeUndefined();
    expect(metricsProjectNames({ ...config, conductor: { ...config.conductor, metricsConsumerLabels: false } })).toBeUndefined();
  });

  it('with a Keystone that takes connections and never answers, a scrape answers at once, the name empty', async () => {
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const authUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v3`;
      const directory = new KeystoneDirectory({ session: new KeystoneSession({ authUrl, auth: serviceAuth(), timeoutMs: 5_000 }), timeoutMs: 5_000 });
      const m = new Metrics('conductor');
      m.watchConductor(run.conductor, { consumerLabels: true, projectName: (id) => directory.cachedProjectName(id) });
      const t0 = performance.now();
      const line = (await m.text()).split('\n').find((l) => l.startsWith('cyborg_accelerator_allocation{') && l.includes(instance))!;
      expect(performance.now() - t0).toBeLessThan(1_000); // the lookup waits 5 s for this Keystone; the scrape does not
      expect([labelOf(line, 'project'), labelOf(line, 'project_name')]).toEqual([demoId, '']);
      await expect.poll(() => held.length, { timeout: 5_000 }).toBeGreaterThan(0); // the lookup did go to Keystone, in the background
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });
});
