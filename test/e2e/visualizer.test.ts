import { mkdirSync } from 'node:fs';
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { svc } from '../services.js';

import { explained, launchChromium, pageDiagnostics } from './browser.js';
import { eventually } from '../support/eventually.js';

const HOST = 'e2e-visual-1';
const SHOTS = 'test-results';

/**
 * An operator at the visualizer, in real Chromium, against a running all-in-one: sees the fake
 * accelerators, walks the FPGA from inactive to programmed by clicking, is never offered a
 * forbidden action, watches a change made with plain HTTP arrive without reloading, and reads
 * each step in the history.
 */
describe.skipIf(!svc.browser)('the visualizer in a browser', () => {
  let run: Running;
  let browser: Browser;
  let page: Page;
  let fpga: { id: string; name: string };
  let said: () => Promise<string>;

  beforeAll(async () => {
    await ensureUiBuilt();
    const config = loadConfig(
      {
        host: HOST,
        logLevel: 'silent',
        logPretty: false,
        listen: { address: '127.0.0.1', port: 0 },
        fake: { gpus: 2, nics: 1, vfsPerNic: 2, opDelayMs: 50 },
        // Frequent heartbeats, so that the last story can lose the agent in seconds.
        timing: { heartbeatIntervalMs: 500, staleAfterMs: 5_000, lostAfterMs: 10_000 },
      },
      {},
    );
    run = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal() });
    fpga = await eventually(() => run.conductor.listAccelerators({ type: 'FPGA' })[0], { what: 'the fake FPGA', timeoutMs: 20_000 });
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    said = pageDiagnostics(page);
    await page.goto(`${run.url}/ui/`);
  }, 240_000); // a first build of the page on a busy machine takes a while

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
  });

  const row = (name: string) => page.locator(`[data-testid=accelerators] [data-name="${name}"]`);
  const detailState = () => page.getByTestId('detail-state');

  it('lists every fake accelerator with its host and its liveness, live', async () => {
    await explained(expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live'), said);
    const all = run.conductor.listAccelerators();
    expect(all.length).toBe(1 + 2 + 2); // the FPGA, two GPUs, one NIC with two VFs
    for (const a of all) await expect.poll(() => row(a.name).count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => page.locator(`[data-host="${HOST}"]`).getAttribute('data-liveness')).toBe('online');
    await expect.poll(() => page.locator('[data-testid=state-counts] [data-state=inactive] b').textContent()).toBe(String(all.length));
  });

  it("shows the FPGA's statechart from the machine definition, with only the allowed actions", async () => {
    await row(fpga.name).click();
    await expect.poll(() => detailState().textContent()).toBe('inactive');
    const chart = page.getByTestId('chart-accelerator');
    await expect.poll(() => chart.getAttribute('data-current'), { timeout: 15_000 }).toBe('inactive');
    // Every state of the machine is drawn, and the current one is highlighted.
    for (const s of ['inactive', 'installing', 'ready', 'programming', 'programmed', 'attaching', 'attached', 'error', 'offline', 'removed']) {
      expect(await chart.locator(`g.node[data-state="${s}"]`).count()).toBe(1);
    }
    expect(await chart.locator('g.node.current').getAttribute('data-state')).toBe('inactive');
    // The common path reads at a glance: the detours (into error, to and from offline, any state's
    // HOST_LOST) are folded until asked for; their states stay drawn.
    const fold = page.getByTestId('chart-fold');
    expect(await fold.getAttribute('data-folded')).toBe('true');
    expect(await fold.textContent()).toMatch(/^\+ \d+ error and offline transitions$/);
    const folded = Number(await chart.getAttribute('data-edges'));
    expect(await chart.locator('g.edge[data-to="error"], g.edge[data-from="offline"], g.edge[data-from="*"]').count()).toBe(0);
    await fold.click();
    await expect.poll(() => fold.getAttribute('data-folded')).toBe('false');
    await expect.poll(async () => Number(await chart.getAttribute('data-edges')), { timeout: 15_000 }).toBeGreaterThan(folded);
    expect(await chart.locator('g.edge[data-to="error"]').count()).toBeGreaterThan(0);
    await fold.click(); // folded again
    await expect.poll(async () => Number(await chart.getAttribute('data-edges')), { timeout: 15_000 }).toBe(folded);
    // Offered: what the machine accepts in `inactive`. Not offered: program, attach, detach, disable.
    expect(await actions()).toEqual(['ENABLE', 'REMOVE']);
  });

  it('walks the FPGA inactive → ready → programmed by clicking, each step confirmed', async () => {
    // Changing one's mind sends nothing.
    await page.locator('[data-action=ENABLE]').click();
    await expect.poll(() => page.getByTestId('confirm').count()).toBe(1);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByTestId('confirm').count()).toBe(0);
    expect(run.conductor.getAccelerator(fpga.id).state).toBe('inactive');

    await click('ENABLE');
    await expect.poll(() => detailState().textContent(), { timeout: 15_000 }).toBe('ready');
    expect(await actions()).not.toContain('ENABLE');
    expect(await actions()).toContain('PROGRAM');

    await page.locator('[data-action=PROGRAM]').click();
    await page.getByTestId('confirm').locator('input[name=bitstreamId]').fill('bs-e2e-1');
    await page.getByTestId('confirm-yes').click();
    await expect.poll(() => detailState().textContent(), { timeout: 15_000 }).toBe('programmed');
    expect(run.conductor.getAccelerator(fpga.id)).toMatchObject({ state: 'programmed', program: { bitstreamId: 'bs-e2e-1' } });
    await expect.poll(() => page.getByTestId('chart-accelerator').getAttribute('data-current')).toBe('programmed');
    // A programmed accelerator cannot be enabled again: the button is not there.
    expect(await actions()).not.toContain('ENABLE');
  });

  it('shows a transition made through the API live, without a reload', async () => {
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));
    const res = await fetch(`${run.url}/cyborg/v1/accelerators/${fpga.id}/attach`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instanceUuid: '6f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b', projectId: 'project-e2e' }),
    });
    expect(res.status).toBe(200);
    await expect.poll(() => detailState().textContent(), { timeout: 10_000 }).toBe('attached');
    await expect.poll(() => page.getByTestId('holders').textContent()).toContain('project-e2e');
    // Attached: reprogramming or removal would pull the device from under the instance.
    expect(await actions()).not.toContain('PROGRAM');
    expect(await actions()).not.toContain('REMOVE');
    expect(navigations).toEqual([]);
  });

  it('lists each step of the FPGA in its history and saves a screenshot', async () => {
    const steps = (): Promise<string[]> =>
      page
        .getByTestId('history')
        .locator('li')
        .evaluateAll((els) => els.map((e) => `${e.getAttribute('data-from')}→${e.getAttribute('data-to')}`).reverse());
    await expect
      .poll(steps, { timeout: 10_000 })
      .toEqual([
        'none→inactive',
        'inactive→installing',
        'installing→ready',
        'ready→programming',
        'programming→programmed',
        'programmed→attaching',
        'attaching→attached',
      ]);
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: `${SHOTS}/visualizer.png`, fullPage: false });
    // The whole machine, enlarged, as an operator opens it.
    await page.setViewportSize({ width: 1600, height: 1300 });
    await page.locator('.chart-box .enlarge').click();
    await page.getByTestId('chart-accelerator-big').screenshot({ path: `${SHOTS}/visualizer-statechart.png` });
    await page.locator('.chart-big .enlarge').click();
    await page.setViewportSize({ width: 1600, height: 1000 });
  });

  it('shows a lost event stream and recovers from it without losing a transition', async () => {
    // The network fails: reconnects are refused and the open stream is cut. A GPU moves meanwhile.
    const gpu = run.conductor.listAccelerators({ type: 'GPU' })[0]!;
    await page.route('**/cyborg/v1/events**', (route) => route.abort('connectionreset'));
    run.app.server.closeAllConnections();
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 10_000 }).toBe('lost');
    await run.conductor.act(gpu.id, { type: 'ENABLE' });
    await page.unroute('**/cyborg/v1/events**');
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
    await expect.poll(() => row(gpu.name).getAttribute('data-state'), { timeout: 10_000 }).toBe('ready');
  });

  it('shows the ARQ, instance and project holding a GPU that Nova bound', async () => {
    const gpu = run.conductor.listAccelerators({ type: 'GPU' }).find((a) => a.state === 'ready')!;
    const arq = await run.conductor.createArq({ deviceProfileName: 'gpu-profile', deviceProfileGroupId: 0, projectId: 'project-nova' });
    const instance = '0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b';
    const bound = await run.conductor.bindArq(arq.uuid, { hostname: HOST, deviceRpUuid: gpu.rpUuid, instanceUuid: instance, projectId: 'project-nova' });
    expect(bound.state).toBe('Bound');
    await row(gpu.name).click();
    await expect.poll(() => detailState().textContent(), { timeout: 10_000 }).toBe('attached');
    const holders = page.getByTestId('holders');
    await expect.poll(() => holders.textContent()).toContain(arq.uuid.slice(0, 8));
    expect(await holders.textContent()).toContain(instance.slice(0, 8));
    expect(await holders.textContent()).toContain('Bound');
    expect(await holders.textContent()).toContain('project-nova');
  });

  it('shows an agent that stops heartbeating as lost, and its accelerators offline, still held', async () => {
    const host = page.locator(`[data-host="${HOST}"]`);
    expect(await host.getAttribute('data-liveness')).toBe('online');
    await run.agent.stop();
    await expect.poll(() => host.getAttribute('data-liveness'), { timeout: 30_000 }).toBe('lost');
    await expect.poll(() => row(fpga.name).getAttribute('data-state'), { timeout: 10_000 }).toBe('offline');
    // Offline keeps its holder: nothing is pulled from under the instance.
    await row(fpga.name).click();
    await expect.poll(() => page.getByTestId('holders').textContent()).toContain('project-e2e');
    await expect.poll(() => page.getByTestId('chart-accelerator').getAttribute('data-current')).toBe('offline');
    // On a detour the chart shows the detours: how it came, and the way back (HOST_BACK).
    expect(await page.getByTestId('chart-fold').count()).toBe(0);
    await expect.poll(() => page.locator('[data-testid=chart-accelerator] g.edge[data-from="offline"]').count()).toBeGreaterThan(0);
  });

  async function actions(): Promise<string[]> {
    return page
      .getByTestId('actions')
      .locator('[data-action]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-action') ?? ''));
  }

  async function click(action: string): Promise<void> {
    await page.locator(`[data-action=${action}]`).click();
    await expect.poll(() => page.getByTestId('confirm').count()).toBe(1);
    await page.getByTestId('confirm-yes').click();
  }
});
