import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { KEYSTONE_URL, password, revoke, serviceAuth, tokenOf } from '../keystone/peer.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { launchChromium } from './browser.js';

/**
 * An operator of a cloud with Keystone opens the visualizer: the page asks who she is, gets a
 * token through the api, and shows only what the policy lets that user do. A reader sees the
 * fleet but no enable button; the admin enables an accelerator and watches it change live on the
 * event stream, which carries the token as every other request does; a wrong password is told
 * so; a token revoked mid-session sends the page back to the form.
 */
describe.skipIf(!svc.browser || !svc.keystone)('the visualizer signs in with Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let url: string;
  let browser: Browser;
  let page: Page;
  let target: { id: string; name: string };

  beforeAll(async () => {
    await ensureUiBuilt();
    // The fake FPGA and one GPU: two accelerators to enable.
    stack = await startStack({ log: quietLogger(), fake: { gpus: 1 } });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    // A short cache TTL, so that a revoked token is refused within a second, as the last story needs.
    const validator = new TokenValidator({ session, cache: { ttlMs: 500 } });
    app = await buildApi({
      control: stack.conductor, log: quietLogger(), v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    target = stack.conductor.listAccelerators().find((a) => a.state === 'inactive')!;
    browser = await launchChromium(svc.browser!);
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto(`${url}/ui/`);
  }, 240_000); // a first build of the page on a busy machine takes a while

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stack?.stop();
  });

  const form = () => page.getByTestId('signin');
  const row = (name: string) => page.locator(`[data-testid=accelerators] [data-name="${name}"]`);
  const actions = (): Promise<string[]> => page.getByTestId('actions').locator('[data-action]').evaluateAll((els) => els.map((e) => e.getAttribute('data-action') ?? ''));

  async function signIn(user: string, project: string, secret = password(user)): Promise<void> {
    await form().locator('input[name=username]').fill(user);
    await form().locator('input[name=password]').fill(secret);
    await form().locator('input[name=project_name]').fill(project);
    await page.getByTestId('signin-submit').click();
  }

  async function signOut(): Promise<void> {
    await page.getByTestId('signout').click();
    await expect.poll(() => form().count()).toBe(1);
  }

  it('asks who is there before showing anything, and keeps no token in the browser\'s storage', async () => {
    await expect.poll(() => form().count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByTestId('accelerators').count()).toBe(0);
    await signIn('demo-reader', 'demo');
    await expect.poll(() => page.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('demo-reader');
    // Evaluated in the page (a string: this file is typed for Node, not the DOM).
    const stored = await page.evaluate('({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })');
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
  });

  it('shows a reader the fleet, live, with no enable button', async () => {
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    for (const a of stack.conductor.listAccelerators()) await expect.poll(() => row(a.name).count(), { timeout: 10_000 }).toBe(1);
    await row(target.name).click();
    await expect.poll(() => page.getByTestId('detail-state').textContent()).toBe('inactive');
    // The machine would accept ENABLE here; the policy does not let a reader send it.
    expect(stack.conductor.getAccelerator(target.id).allowed).toContain('ENABLE');
    await expect.poll(() => page.getByTestId('actions-not-permitted').count()).toBe(1);
    expect(await actions()).toEqual([]);
    expect(await page.locator('[data-service=MAINTAIN]').count()).toBe(0);
    await signOut();
  });

  it('tells a wrong password, and signs nobody in', async () => {
    await signIn('admin', 'admin', 'not-the-password');
    await expect.poll(() => page.getByTestId('signin-error').textContent(), { timeout: 15_000 }).toContain('refused these credentials');
    expect(await page.getByTestId('who').count()).toBe(0);
  });

  it('shows the admin the enable button; the click changes the state live over the authenticated stream', async () => {
    await signIn('admin', 'admin');
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    await row(target.name).click();
    await expect.poll(() => actions(), { timeout: 10_000 }).toContain('ENABLE');
    await page.locator('[data-action=ENABLE]').click();
    await page.getByTestId('confirm-yes').click();
    // The page learns the new state from the event stream only: the stream works with the token.
    await expect.poll(() => page.getByTestId('detail-state').textContent(), { timeout: 15_000 }).toBe('ready');
    expect(stack.conductor.getAccelerator(target.id).state).toBe('ready');
    // A change made elsewhere arrives too, without a reload.
    const other = stack.conductor.listAccelerators().find((a) => a.state === 'inactive' && a.id !== target.id)!;
    await stack.conductor.act(other.id, { type: 'ENABLE' });
    await expect.poll(() => row(other.name).getAttribute('data-state'), { timeout: 15_000 }).toBe('ready');
    await signOut();
  });

  it('takes a pasted token, and returns to the form when Keystone revokes it mid-session', async () => {
    const own = await tokenOf('admin');
    await page.getByRole('button', { name: 'paste a token' }).click();
    await form().locator('textarea[name=token]').fill(own.token);
    await page.getByTestId('signin-submit').click();
    await expect.poll(() => page.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('admin');
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    await revoke(own.token);
    await new Promise((r) => setTimeout(r, 600)); // the api's cache TTL
    // The next request the page makes (this accelerator's history) is refused: back to the form, saying why.
    const other = stack.conductor.listAccelerators().find((a) => a.id !== target.id)!;
    await row(other.name).click();
    await expect.poll(() => form().count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByTestId('signin-reason').textContent()).toContain('session has ended');
  });
});
