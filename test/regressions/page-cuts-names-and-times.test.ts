/**
 * Issue 42, the page's smaller surprises, in real Chromium: the favicon 404'd in every console;
 * names of one host, cut at their end in a narrow column, read the same (`compute-1_fake_gp…`
 * twelve times); the audit's time column was cut to "12-01 2…". Now the icon is inline, a name
 * is cut in its middle with its end kept, and the audit's column holds its date and time.
 */
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { FakeDriver } from '../../drivers/fake/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { svc } from '../services.js';
import { launchChromium } from '../e2e/browser.js';

const HOST = 'a-rather-long-compute-host-name-17';

/** Runs in the page: whether each element of `selector` shows all its text (nothing cut by its box). */
const uncut = (selector: string) => `[...document.querySelectorAll(${JSON.stringify(selector)})].filter((e) => e.offsetParent).map((e) => ({
  text: e.textContent, whole: e.scrollWidth <= e.clientWidth + 1 && e.getBoundingClientRect().right <= e.parentElement.getBoundingClientRect().right + 1,
}))`;

describe.skipIf(!svc.browser)('the page cuts no name nor time into sameness', () => {
  let run: Running;
  let browser: Browser;
  let page: Page;
  const missing: string[] = [];

  beforeAll(async () => {
    await ensureUiBuilt();
    const config = loadConfig({ host: HOST, logLevel: 'silent', logPretty: false, listen: { address: '127.0.0.1', port: 0 } }, {});
    run = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal(), fake: new FakeDriver({ host: HOST, gpus: 12 }), drivers: [] });
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1024, height: 900 } });
    page.on('response', (r) => {
      if (r.status() === 404) missing.push(r.url());
    });
    await page.goto(`${run.url}/ui/`);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await run?.stop();
  });

  it('asks nothing the server lacks: no favicon 404', async () => {
    await expect.poll(() => page.locator('.acc').count(), { timeout: 30_000 }).toBeGreaterThan(10);
    expect(await page.locator('link[rel=icon]').count()).toBe(1);
    expect(missing).toEqual([]);
  });

  it("twelve GPUs of one host: each row's name ends differently, that end never cut", async () => {
    const names = await page.evaluate<{ text: string; whole: boolean }[]>(uncut('.acc .name .tail'));
    const gpus = names.filter((n) => /gpu/.test(n.text));
    expect(gpus.length).toBeGreaterThanOrEqual(12);
    expect(gpus.filter((n) => !n.whole)).toEqual([]);
    expect(new Set(gpus.map((n) => n.text)).size).toBe(gpus.length);
  });

  it("the audit's time column holds the date and the time", async () => {
    const [gpu] = run.conductor.listAccelerators({ type: 'GPU' });
    expect((await run.app.inject({ method: 'POST', url: `/cyborg/v1/accelerators/${gpu!.id}/enable`, payload: {} })).statusCode).toBe(200);
    await page.getByTestId('audit-tab').click();
    await expect.poll(() => page.locator('[data-testid=audit] li time').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    const times = await page.evaluate<{ text: string; whole: boolean }[]>(uncut('[data-testid=audit] li time'));
    expect(times[0]!.text).toMatch(/^\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(times.filter((t) => !t.whole)).toEqual([]);
  });
});
