/**
 * Issue 42: in keystone mode, typing `admin` in the visualizer's audit user box found nothing
 * though the API did, and a device's history showed the Keystone user id. The rows are written
 * with the user id from the token and, beside it, Keystone's name: the page in real Chromium,
 * signed in as the admin against the real Keystone, with the log in PostgreSQL as in production,
 * finds the admin's enable by the name typed, and the history names who asked (the id on hover).
 * The holders of a card, too, were shown by project id (the snapshot and the stream carry ids):
 * a GPU attached to an instance of project demo reads "demo" in its row, its detail's holders and
 * the project picker, the id on hover — the instance by its uuid (its name is Nova's).
 */
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureUiBuilt } from '../../ui/build.js';
import { startKeystoneStack, type KeystoneStack } from '../keystone/keystone-stack.js';
import { password, tokenOf } from '../keystone/peer.js';
import { svc } from '../services.js';
import { explained, launchChromium, pageDiagnostics } from '../e2e/browser.js';

describe.skipIf(!svc.browser || !svc.keystone || !svc.postgres)("the audit's user box, the history and the holders find and name people by name", () => {
  let ks: KeystoneStack;
  let browser: Browser;
  let page: Page;
  let said: () => Promise<string>;
  let adminId: string;

  beforeAll(async () => {
    await ensureUiBuilt();
    ks = await startKeystoneStack('surprises_auditbox', { gpus: 1 });
    adminId = (await tokenOf('admin')).userId;
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    said = pageDiagnostics(page);
    await page.goto(`${ks.url}/ui/`);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await ks?.stop();
  });

  it('the admin enables a card from the page; its history says admin, the id on hover', async () => {
    const form = page.getByTestId('signin');
    await expect.poll(() => form.count(), { timeout: 30_000 }).toBe(1);
    await form.locator('input[name=username]').fill('admin');
    await form.locator('input[name=password]').fill(password('admin'));
    await form.locator('input[name=project_name]').fill('admin');
    await page.getByTestId('signin-submit').click();
    await explained(expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 30_000 }).toBe('live'), said);
    const fpga = ks.stack.conductor.listAccelerators({ type: 'FPGA' })[0]!;
    await page.locator(`[data-testid=accelerators] [data-name="${fpga.name}"]`).click();
    await page.locator('[data-action=ENABLE]').click();
    await page.getByTestId('confirm-yes').click();
    await explained(expect.poll(() => page.getByTestId('detail-state').textContent(), { timeout: 30_000 }).toBe('ready'), said);
    // Loaded again from the log (PostgreSQL), not only from the live stream: another card, then back.
    const other = ks.stack.conductor.listAccelerators().find((a) => a.id !== fpga.id)!;
    await page.locator(`[data-testid=accelerators] [data-name="${other.name}"]`).click();
    await page.locator(`[data-testid=accelerators] [data-name="${fpga.name}"]`).click();
    const actor = page.locator('[data-testid=history] li[data-from=inactive][data-to=installing] [data-testid=history-actor]');
    await explained(expect.poll(() => actor.textContent(), { timeout: 15_000 }).toBe('admin (admin)'), said);
    expect(await actor.getAttribute('title')).toBe(adminId);
  });

  it('typing admin in the audit user box finds the enable, named admin', async () => {
    await page.getByTestId('audit-tab').click();
    await page.getByTestId('audit-user').fill('admin');
    const rows = page.locator('[data-testid=audit] li[data-event=ENABLE]');
    await explained(expect.poll(() => rows.count(), { timeout: 15_000 }).toBeGreaterThan(0), said);
    expect(await rows.first().locator('.actor').textContent()).toBe('admin (admin)');
    expect(await rows.first().getAttribute('data-actor')).toBe(adminId);
    // By id it finds the same row; by a name nobody has, nothing.
    await page.getByTestId('audit-user').fill(adminId);
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await page.getByTestId('audit-user').fill('nobody-by-that-name');
    await expect.poll(() => page.locator('[data-testid=audit] li').count(), { timeout: 15_000 }).toBe(0);
  });

  it('a card held by an instance of project demo: its row, holders and the project picker say demo, the id on hover', async () => {
    const [admin, demo] = await Promise.all([tokenOf('admin'), tokenOf('demoReader')]);
    const gpu = ks.stack.conductor.listAccelerators({ type: 'GPU' })[0]!;
    await ks.stack.conductor.act(gpu.id, { type: 'ENABLE' });
    const instance = randomUUID();
    const attached = await ks.app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${gpu.id}/attach`,
      headers: { 'x-auth-token': admin.token },
      payload: { instanceUuid: instance, projectId: demo.projectId },
    });
    expect(attached.statusCode, attached.body).toBe(200);
    const row = page.locator(`[data-testid=accelerators] [data-name="${gpu.name}"] .holders`);
    await explained(expect.poll(() => row.textContent(), { timeout: 15_000 }).toMatch(/held · demo$/), said);
    expect(await row.getAttribute('title')).toBe(demo.projectId);
    await page.locator(`[data-testid=accelerators] [data-name="${gpu.name}"]`).click();
    const holder = page.locator('[data-testid=holders] [data-testid=holder-project]');
    await explained(expect.poll(() => holder.textContent(), { timeout: 15_000 }).toBe('demo'), said);
    expect(await holder.getAttribute('title')).toBe(demo.projectId);
    expect(await page.locator('[data-testid=holders] td[title]').first().getAttribute('title')).toBe(instance);
    const option = page.locator(`[data-testid=filter-project] option[value="${demo.projectId}"]`);
    expect(await option.textContent()).toBe('demo');
  });
});
