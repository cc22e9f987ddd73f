import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcceleratorView, Capacity, CapacityCounts } from '../../model/index.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { svc } from '../services.js';
import { eventually } from '../support/eventually.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { launchChromium } from './browser.js';

/**
 * An operator looking after a fleet of 10,000 accelerators in the visualizer, in real Chromium:
 * counts by state, health and maintenance at a glance; one quarantined GPU found among them in a
 * click; a host with two attached instances drained from the page, cancelled midway and drained
 * again until the instances leave, and who did it in the audit log; a device's and a host's usage
 * drawn from the conductor's window.
 */
const HOSTS = Array.from({ length: 100 }, (_, i) => `rack-${String(i).padStart(3, '0')}`);
// Per host, as bench:ui: the fake FPGA, 9 GPUs and 10 NICs of 9 VFs each = 100 accelerators.
const PER_HOST = { gpus: 9, nics: 10, vfsPerNic: 9 };
const TOTAL = HOSTS.length * 100;
const vm1 = '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11';
const vm2 = '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f';

describe.skipIf(!svc.browser)('the visualizer at fleet scale', () => {
  let s: Stack;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    await ensureUiBuilt();
    s = await startStack({
      hosts: HOSTS,
      fake: PER_HOST,
      api: true,
      log: quietLogger(),
      // One fatal check quarantines; the story drives checks and telemetry itself, one round at a time.
      agent: { telemetryIntervalMs: 0 },
      timing: { healthEnterAfter: 1, healthLeaveAfter: 1, healthStableMs: 0 },
    });
    await eventually(() => s.conductor.listAccelerators().length === TOTAL || undefined, { what: `${TOTAL} accelerators registered`, timeoutMs: 120_000 });
    await s.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = s.app.server.address();
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    page.on('dialog', (d) => void d.accept());
    await page.goto(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/ui/`);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  const chip = (facet: 'health' | 'service', value: string) => page.locator(`[data-testid=facet-counts] [data-facet=${facet}][data-value="${value}"]`);
  const count = (facet: 'health' | 'service', value: string) => chip(facet, value).locator('b').textContent();
  const rows = () => page.locator('[data-testid=accelerators] .acc');
  const host = (name: string) => page.locator(`[data-testid=hosts] [data-host="${name}"]`);
  const post = (url: string, payload: object = {}) => s.app.inject({ method: 'POST', url: `/cyborg/v1${url}`, payload });
  const gpusOf = (h: string): AcceleratorView[] => s.conductor.listAccelerators({ host: h, type: 'GPU' }).sort((a, b) => a.name.localeCompare(b.name));

  it('shows all 10,000 accelerators with their counts by state, health and maintenance at a glance', async () => {
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 30_000 }).toBe('live');
    await expect.poll(() => page.locator('[data-testid=state-counts] .chip').first().locator('b').textContent(), { timeout: 60_000 }).toBe(String(TOTAL));
    expect(await count('health', 'ok')).toBe(String(TOTAL));
    expect(await count('health', 'quarantined')).toBe('0');
    expect(await count('service', 'in service')).toBe(String(TOTAL));
    expect(await count('service', 'draining')).toBe('0');
    // Virtualised: the page holds a screenful of rows, not 10,000.
    expect(await rows().count()).toBeLessThan(200);
  });

  it('finds the one quarantined GPU among 10,000 with a click on its health count', async () => {
    const sick = gpusOf('rack-007')[3]!;
    expect((await post(`/accelerators/${sick.id}/enable`)).statusCode).toBe(200);
    s.fakes[7]!.injectHealthFault(sick.id, 'fatal', 'Xid 79: GPU has fallen off the bus');
    await s.agents[7]!.checkHealth();
    await eventually(() => s.conductor.getAccelerator(sick.id).health?.status === 'quarantined' || undefined, { what: 'the GPU quarantined' });

    await expect.poll(() => count('health', 'quarantined')).toBe('1');
    expect(await count('health', 'ok')).toBe(String(TOTAL - 1));
    await chip('health', 'quarantined').click();
    await expect.poll(() => rows().count()).toBe(1);
    expect(await rows().first().getAttribute('data-name')).toBe(sick.name);
    expect(await rows().first().getAttribute('data-health')).toBe('quarantined');
    // Its detail never reads "quarantined · in service": no mark, but out of service all the same.
    await rows().first().click();
    await expect.poll(() => page.getByTestId('health').textContent(), { timeout: 15_000 }).toMatch(/^health quarantined \(fatal\): Xid 79/);
    await expect.poll(() => page.getByTestId('mark').textContent(), { timeout: 15_000 }).toBe('out of service: quarantined');
    await page.screenshot({ path: 'test-results/visualizer-fleet-quarantined.png' });
    // Its host says so; its siblings and every other host stay in service.
    await expect.poll(() => host('rack-007').locator('.sick').textContent()).toBe('⚠1');
    expect(await page.locator('[data-testid=hosts] .sick').count()).toBe(1);
    await chip('health', 'quarantined').click(); // back to every health
    // Out of service, though unmarked: "in service" does not count it (issue 42).
    await expect.poll(() => count('service', 'in service')).toBe(String(TOTAL - 1));
    expect(await count('service', 'out of service')).toBe('1');
  });

  it('drains a host with two attached instances from the page, cancels midway, and finishes when the instances leave', async () => {
    const [g1, g2, g3] = gpusOf('rack-012');
    for (const [g, vm] of [
      [g1!, vm1],
      [g2!, vm2],
    ] as const) {
      expect((await post(`/accelerators/${g.id}/enable`)).statusCode).toBe(200);
      expect((await post(`/accelerators/${g.id}/attach`, { instanceUuid: vm, projectId: 'p-blue' })).statusCode).toBe(200);
    }
    expect((await post(`/accelerators/${g3!.id}/enable`)).statusCode).toBe(200);

    // The project picker narrows 10,000 to the two its instances hold.
    await expect.poll(() => page.getByTestId('filter-project').locator('option', { hasText: 'p-blue' }).count(), { timeout: 15_000 }).toBe(1);
    await page.getByTestId('filter-project').selectOption('p-blue');
    await expect.poll(() => rows().count()).toBe(2);
    await page.getByTestId('filter-project').selectOption('');

    await host('rack-012').click();
    const panel = page.getByTestId('host-panel');
    await expect.poll(() => panel.getAttribute('data-host')).toBe('rack-012');
    await panel.locator('[data-host-action=drain]').click();
    await panel.locator('[data-confirm=yes]').click();
    // Every device reserved at once; the two held ones draining, the rest straight to maintenance.
    await expect.poll(() => panel.getAttribute('data-drain')).toBe('draining');
    await expect.poll(() => count('service', 'draining')).toBe('2');
    expect(await count('service', 'maintenance')).toBe('98');
    expect(await host('rack-012').getAttribute('data-drain')).toBe('draining');
    expect(await page.getByTestId('hosts-draining').textContent()).toContain('1 draining');
    expect(await panel.getByTestId('drain-state').textContent()).toContain('2 device(s) still held');
    // Nothing new is bound on the drained host.
    expect((await post(`/accelerators/${g3!.id}/attach`, { instanceUuid: vm1 })).statusCode).toBe(409);
    // Attached instances keep running.
    expect(s.conductor.getAccelerator(g1!.id)).toMatchObject({ state: 'attached', maintenance: { mark: 'draining', consumers: [{ instanceUuid: vm1 }] } });

    expect((await post(`/accelerators/${g1!.id}/detach`, { instanceUuid: vm1 })).statusCode).toBe(200);
    await expect.poll(() => panel.getByTestId('drain-state').textContent()).toContain('1 device(s) still held');

    // Cancelled midway: back in service, the remaining instance untouched.
    await panel.locator('[data-host-action=cancel-drain]').click();
    await panel.locator('[data-confirm=yes]').click();
    await expect.poll(() => panel.getAttribute('data-drain')).toBe('none');
    await expect.poll(() => count('service', 'in service')).toBe('100');
    expect(s.conductor.getAccelerator(g2!.id)).toMatchObject({ state: 'attached', maintenance: null });

    // Drained again; done when the last instance leaves.
    await panel.locator('[data-host-action=drain]').click();
    await panel.locator('[data-confirm=yes]').click();
    await expect.poll(() => count('service', 'draining')).toBe('1');
    expect((await post(`/accelerators/${g2!.id}/detach`, { instanceUuid: vm2 })).statusCode).toBe(200);
    await expect.poll(() => panel.getAttribute('data-drain')).toBe('drained');
    expect(await count('service', 'maintenance')).toBe('100');
    expect(await page.getByTestId('hosts-draining').count()).toBe(0);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/visualizer-fleet-drain.png' });

    // The audit log says who drained it: the host's MAINTAIN rows, newest first, fifty a page.
    await page.getByTestId('audit-tab').click();
    await page.getByTestId('audit-action').fill('maintain');
    const audit = page.locator('[data-testid=audit] li');
    await expect.poll(() => audit.count()).toBe(50);
    expect(new Set(await audit.evaluateAll((lis) => lis.map((li) => `${li.getAttribute('data-event')} by ${li.getAttribute('data-actor')}`)))).toEqual(
      new Set(['MAINTAIN by operator']),
    );
    await page.getByTestId('audit-older').click();
    await expect.poll(() => audit.count()).toBe(100);
    await page.getByTestId('audit-action').fill('end_maintenance');
    await expect.poll(() => audit.count()).toBe(50);
    await page.locator('[data-testid=feed] .tab').first().click();
    await host('rack-012').click(); // the host filter off again
  });

  it('shows free capacity for the fleet and for a host, as GET /cyborg/v1/capacity counts it', async () => {
    const api = (await s.app.inject({ method: 'GET', url: '/cyborg/v1/capacity' })).json() as Capacity;
    const free = (rows: CapacityCounts[]): string => String(rows.reduce((n, r) => n + r.free, 0));
    const panel = page.getByTestId('capacity');
    await expect.poll(() => panel.getAttribute('data-scope'), { timeout: 15_000 }).toBe('fleet');
    await expect.poll(() => page.getByTestId('capacity-free').textContent(), { timeout: 15_000 }).toBe(free(api.fleet));
    await panel.locator('summary').click();
    for (const r of api.fleet) {
      expect(await panel.locator(`tr[data-rc="${r.resourceClass}"] td`).allTextContents()).toEqual([
        r.resourceClass,
        ...[r.total, r.used, r.reserved, r.quarantined, r.maintenance, r.free].map(String),
      ]);
    }
    // The quarantined GPU of rack-007 is reserved there, and said to be quarantined.
    await host('rack-007').click();
    await expect.poll(() => panel.getAttribute('data-scope'), { timeout: 15_000 }).toBe('rack-007');
    const rack = api.hosts.find((h) => h.host === 'rack-007')!;
    await expect.poll(() => page.getByTestId('capacity-free').textContent(), { timeout: 15_000 }).toBe(free(rack.classes));
    expect(rack.classes.find((c) => c.resourceClass === 'PGPU')?.quarantined).toBe(1);
    expect(await panel.locator('tr[data-rc="PGPU"] td.warn').textContent()).toBe('1');
    await page.screenshot({ path: 'test-results/visualizer-fleet-capacity.png' });
    await host('rack-007').click(); // the host filter off again
  });

  it("draws a GPU's and its host's usage from the conductor's window", async () => {
    const gpu = gpusOf('rack-003')[0]!;
    // Three telemetry rounds, a second apart, so that the host's chart has three ticks too.
    for (let i = 0; i < 3; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 1_100));
      await s.agents[3]!.telemetry();
    }
    await eventually(async () => (await s.conductor.acceleratorUsage(gpu.id)).samples.length === 3 || undefined, { what: 'three samples in the window' });

    await host('rack-003').click();
    const hostUsage = page.getByTestId('host-usage');
    await expect.poll(() => hostUsage.locator('[data-series=utilization]').getAttribute('data-samples'), { timeout: 15_000 }).toBe('3');
    await page.locator(`[data-testid=accelerators] [data-name="${gpu.name}"]`).click();
    const usage = page.getByTestId('usage');
    await expect.poll(() => usage.locator('[data-series=utilization]').getAttribute('data-samples'), { timeout: 15_000 }).toBe('3');
    expect(await usage.locator('[data-series=utilization] polyline').getAttribute('points')).toMatch(/^[\d.]+,[\d.]+ [\d.]+,[\d.]+ [\d.]+,[\d.]+$/);
    // Each chart says how old its latest sample is.
    expect(await usage.getByTestId('usage-age').textContent()).toMatch(/^latest sample \d+ s ago$/);
    expect(await usage.locator('.charts').getAttribute('data-stale')).toBe('false');
    await page.screenshot({ path: 'test-results/visualizer-fleet-usage.png' });

    // No telemetry for two minutes (a lost host, a pulled card): the page greys the charts and says so.
    await page.clock.install();
    await page.clock.fastForward(120_000);
    await expect.poll(() => usage.locator('.charts').getAttribute('data-stale'), { timeout: 15_000 }).toBe('true');
    expect(await usage.getByTestId('usage-age').textContent()).toMatch(/^stale: the latest sample is 2 min old — not how the card is now$/);
    await page.screenshot({ path: 'test-results/visualizer-fleet-usage-stale.png' });
  });
});
