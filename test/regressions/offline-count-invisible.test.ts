/**
 * Issue 42: the page's `offline` count was invisible — `ui/src/style.css` overrode its fix with a
 * rule of the same specificity placed later (rgb(249,250,251) on white). Here, in real Chromium,
 * every count and chip on the page (the state chips with an offline and a removed one among them,
 * the facet chips, the badges) is measured against the background it is drawn on: WCAG AA, 4.5:1.
 */
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { loadConfig } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { svc } from '../services.js';
import { launchChromium } from '../e2e/browser.js';

/**
 * Runs in the page (a string: this project's TypeScript has no DOM types): each visible chip, count
 * and badge with its contrast ratio against the first opaque background behind it.
 */
const MEASURE = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) ?? []).map(Number);
  const lum = ([r, g, b]) => {
    const ch = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b);
  };
  const behind = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.querySelectorAll('.chip, .chip b, .badge')) {
    if (!el.offsetParent || !el.textContent.trim()) continue;
    const fg = lum(rgb(getComputedStyle(el).color));
    const bg = lum(behind(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    out.push({ what: el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ' "' + el.textContent.trim().slice(0, 30) + '"', ratio: Math.round(ratio * 100) / 100 });
  }
  return out;
})()`;

describe.skipIf(!svc.browser)('every count and chip on the page is readable (WCAG AA)', () => {
  let run: Running;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    await ensureUiBuilt();
    const config = loadConfig(
      {
        host: 'contrast-host',
        logLevel: 'silent',
        logPretty: false,
        listen: { address: '127.0.0.1', port: 0 },
        timing: { heartbeatIntervalMs: 500, staleAfterMs: 2_000, lostAfterMs: 4_000 },
      },
      {},
    );
    run = await startAllInOne(config, pino({ level: 'silent' }), { journal: new MemoryJournal() });
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(`${run.url}/ui/`);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await run?.stop();
  });

  it('an offline host: its count, and every other chip and badge, at 4.5:1 or more', async () => {
    // The agent goes away: its devices turn offline (the chip that was white on white).
    await run.agent.stop();
    await expect.poll(() => page.locator('[data-testid=state-counts] [data-state=offline]').count(), { timeout: 30_000 }).toBe(1);
    const measured = await page.evaluate<{ what: string; ratio: number }[]>(MEASURE);
    expect(measured.some((m) => m.what.includes('state-offline'))).toBe(true);
    expect(measured.length).toBeGreaterThan(5);
    expect(measured.filter((m) => m.ratio < 4.5)).toEqual([]);
  });
});
