import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/server.js';
import { KeystoneSession, TokenValidator } from '../../openstack/keystone/index.js';
import { ensureUiBuilt } from '../../ui/build.js';
import { KEYSTONE_URL, password, revoke, serviceAuth, tokenOf } from '../keystone/peer.js';
import { svc } from '../services.js';
import { quietLogger } from '../support/log.js';
import { startStack, type Stack } from '../support/stack.js';
import { explained, launchChromium, pageDiagnostics } from './browser.js';

/**
 * An operator of a cloud with Keystone opens the visualizer: the page asks who she is, gets a
 * token through the api, and shows only what the policy lets that user do. A reader sees the
 * fleet but no enable button; the admin enables an accelerator and watches it change live on the
 * event stream, which carries the session cookie as every other request does; a wrong password
 * is told so; a token revoked mid-session sends the page back to the form. The session is an
 * HttpOnly, SameSite=Strict cookie the api maps to the token: a reload keeps it, another page's
 * POST carrying it is refused, signing out ends it on the api, and its token's expiry is
 * announced with a prompt for the password (the page's clock run ahead).
 */
describe.skipIf(!svc.browser || !svc.keystone)('the visualizer signs in with Keystone', () => {
  let stack: Stack;
  let app: FastifyInstance;
  let url: string;
  let browser: Browser;
  let page: Page;
  let said: () => Promise<string>;
  let validator: TokenValidator;
  let target: { id: string; name: string };
  let held: { id: string; name: string };

  beforeAll(async () => {
    await ensureUiBuilt();
    // The fake FPGA and three GPUs: one held by an instance of project demo, the rest to enable.
    stack = await startStack({ log: quietLogger(), fake: { gpus: 3 } });
    const session = new KeystoneSession({ authUrl: KEYSTONE_URL, auth: serviceAuth() });
    // The api's own cache TTL: Keystone is asked once per token, not on every request; the last
    // story empties the cache where waiting out its TTL would take minutes.
    validator = new TokenValidator({ session, cache: { ttlMs: 300_000 } });
    app = await buildApi({
      control: stack.conductor,
      log: quietLogger(),
      v2: { authStrategy: 'keystone' },
      auth: { keystone: { validator, wwwAuthenticateUri: 'http://127.0.0.1:15001' } },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    // A reader of project demo sees what her project holds, not the fleet (api/scope.ts): give it a GPU.
    held = stack.conductor.listAccelerators().find((a) => a.deviceType === 'GPU')!;
    await stack.conductor.act(held.id, { type: 'ENABLE' });
    const [admin, reader] = await Promise.all([tokenOf('admin'), tokenOf('demoReader')]);
    const attached = await app.inject({
      method: 'POST',
      url: `/cyborg/v1/accelerators/${held.id}/attach`,
      headers: { 'x-auth-token': admin.token },
      payload: { instanceUuid: randomUUID(), projectId: reader.projectId },
    });
    expect(attached.statusCode).toBe(200);
    target = stack.conductor.listAccelerators().find((a) => a.state === 'inactive')!;
    browser = await launchChromium(svc.browser!);
    // A context of its own: the attacker's pages later share its cookie jar, as tabs of one browser do.
    page = await (await browser.newContext({ viewport: { width: 1600, height: 1000 } })).newPage();
    said = pageDiagnostics(page);
    await page.goto(`${url}/ui/`);
  }, 240_000); // a first build of the page on a busy machine takes a while

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stack?.stop();
  });

  const form = () => page.getByTestId('signin');
  const row = (name: string) => page.locator(`[data-testid=accelerators] [data-name="${name}"]`);
  const actions = (): Promise<string[]> =>
    page
      .getByTestId('actions')
      .locator('[data-action]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-action') ?? ''));

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

  it("asks who is there before showing anything, and keeps no token in the browser's storage", async () => {
    await expect.poll(() => form().count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByTestId('accelerators').count()).toBe(0);
    await signIn('demo-reader', 'demo');
    await expect.poll(() => page.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('demo-reader');
    // Evaluated in the page (a string: this file is typed for Node, not the DOM).
    const stored = await page.evaluate('({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })');
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
    // The session is a cookie no script reads, only this api's operator routes get, and no other site's page sends.
    const cookies = await page.context().cookies(`${url}/cyborg/v1/`);
    expect(cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, path: c.path }))).toEqual([
      { name: 'cyborg_session', httpOnly: true, sameSite: 'Strict', path: '/cyborg/v1' },
    ]);
  });

  it('keeps the session across a reload', async () => {
    await page.reload();
    await expect.poll(() => page.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('demo-reader');
    expect(await form().count()).toBe(0);
  });

  it('shows a reader what her project holds, live, with no action button', async () => {
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    await expect.poll(() => row(held.name).count(), { timeout: 10_000 }).toBe(1);
    for (const a of stack.conductor.listAccelerators().filter((x) => x.id !== held.id)) expect(await row(a.name).count()).toBe(0);
    await row(held.name).click();
    await expect.poll(() => page.getByTestId('detail-state').textContent(), { timeout: 10_000 }).toBe('attached');
    // The machine would accept DETACH here; the policy does not let a reader send it.
    expect(stack.conductor.getAccelerator(held.id).allowed).toContain('DETACH');
    await expect.poll(() => page.getByTestId('actions-not-permitted').count(), { timeout: 10_000 }).toBe(1);
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
    await explained(expect.poll(() => page.getByTestId('detail-state').textContent(), { timeout: 30_000 }).toBe('ready'), said);
    expect(stack.conductor.getAccelerator(target.id).state).toBe('ready');
    // A change made elsewhere arrives too, without a reload.
    const other = stack.conductor.listAccelerators().find((a) => a.state === 'inactive' && a.id !== target.id)!;
    await stack.conductor.act(other.id, { type: 'ENABLE' });
    await expect.poll(() => row(other.name).getAttribute('data-state'), { timeout: 15_000 }).toBe('ready');
    await signOut();
  });

  it("refuses another page's POST that carries the session cookie, and ends the session on the api at sign-out", async () => {
    await signIn('admin', 'admin');
    await expect.poll(() => page.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('admin');
    const victim = stack.conductor.listAccelerators().find((a) => a.state === 'inactive')!;
    // The attacker's page: same host, another port (the same site, so SameSite=Strict still sends
    // the cookie: the Origin check is what stops it), and another host name (another site: no cookie).
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form method="POST" action="${url}/cyborg/v1/accelerators/${victim.id}/enable" enctype="text/plain"><input name="x" value="1"></form><script>document.forms[0].submit()</script>`,
      );
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    const evilPort = (evil.address() as AddressInfo).port;
    try {
      for (const origin of [`http://127.0.0.1:${evilPort}`, `http://localhost:${evilPort}`]) {
        const attacker = await page.context().newPage();
        const posted = attacker.waitForResponse((r) => r.url().endsWith(`/accelerators/${victim.id}/enable`), { timeout: 15_000 });
        await attacker.goto(`${origin}/`);
        const res = await posted;
        expect(res.status(), origin).toBeGreaterThanOrEqual(401);
        expect(res.status(), origin).toBeLessThanOrEqual(403);
        if (origin.includes('127.0.0.1')) {
          // The cookie went along (same site), and the api refused the write for its Origin.
          expect(res.request().headers().cookie ?? (await res.request().allHeaders()).cookie).toContain('cyborg_session=');
          expect(res.status()).toBe(403);
          expect(await res.text()).toContain('cross_site');
        }
        await attacker.close();
      }
    } finally {
      evil.close();
    }
    expect(stack.conductor.getAccelerator(victim.id).state).toBe('inactive');
    // Signing out ends the session on the api: the same cookie, replayed, is refused.
    const [cookie] = await page.context().cookies(`${url}/cyborg/v1/`);
    await signOut();
    const replay = await request(`${url}/cyborg/v1/auth/whoami`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` } });
    await replay.body.dump();
    expect(replay.statusCode).toBe(401);
    // A forged cookie gets the form, not the fleet.
    await page.context().addCookies([{ ...cookie!, value: 'forged-forged-forged-forged-forged-forged-f' }]);
    await page.reload();
    await expect.poll(() => form().count(), { timeout: 15_000 }).toBe(1);
  });

  it("asks for the password again before Keystone's token expires, and renews the session in place", async () => {
    const timed = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const timedSaid = pageDiagnostics(timed);
    await timed.clock.install();
    try {
      await timed.goto(`${url}/ui/`);
      const f = timed.getByTestId('signin');
      await expect.poll(() => f.count(), { timeout: 15_000 }).toBe(1);
      await f.locator('input[name=username]').fill('admin');
      await f.locator('input[name=password]').fill(password('admin'));
      await f.locator('input[name=project_name]').fill('admin');
      await timed.getByTestId('signin-submit').click();
      await expect.poll(() => timed.getByTestId('who').textContent(), { timeout: 15_000 }).toContain('admin');
      // Keystone's tokens live an hour here: the prompt comes five minutes before the end.
      await timed.clock.fastForward('56:00');
      await expect.poll(() => timed.getByTestId('renew').count(), { timeout: 10_000 }).toBe(1);
      expect(await timed.getByTestId('renew-reason').textContent()).toContain('expires at');
      await timed.getByTestId('renew').locator('input[name=password]').fill(password('admin'));
      await timed.getByTestId('renew-submit').click();
      await explained(expect.poll(() => timed.getByTestId('renew').count(), { timeout: 30_000 }).toBe(0), timedSaid);
      expect(await timed.getByTestId('who').textContent()).toContain('admin');
      // Nobody answers the next prompt: at the expiry the form comes back, saying why.
      await timed.clock.fastForward('10:00');
      await expect.poll(() => timed.getByTestId('signin').count(), { timeout: 10_000 }).toBe(1);
      expect(await timed.getByTestId('signin-reason').textContent()).toContain("Keystone's token for it expired");
    } finally {
      await timed.close();
    }
  });

  it('takes a pasted token, and returns to the form when Keystone revokes it mid-session', async () => {
    const own = await tokenOf('admin');
    await page.getByRole('button', { name: 'paste a token' }).click();
    await form().locator('textarea[name=token]').fill(own.token);
    await page.getByTestId('signin-submit').click();
    await explained(expect.poll(() => page.getByTestId('who').count(), { timeout: 30_000 }).toBe(1), said);
    expect(await page.getByTestId('who').textContent()).toContain('admin');
    await explained(expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 30_000 }).toBe('live'), said);
    await revoke(own.token);
    validator.cache.clear(); // the api's cache TTL has passed
    // The next request the page makes (this accelerator's history) is refused: back to the form, saying why.
    const other = stack.conductor.listAccelerators().find((a) => a.id !== target.id)!;
    await row(other.name).click();
    await explained(expect.poll(() => form().count(), { timeout: 30_000 }).toBe(1), said);
    expect(await page.getByTestId('signin-reason').textContent()).toContain('session has ended');
  });
});
