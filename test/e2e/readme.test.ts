import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONS } from '../../config/options.js';
import { PORTS } from '../../config/ports.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/ports.js';
import { ProcessGroup } from '../support/process-group.js';
import { svc } from '../services.js';
import { launchChromium } from './browser.js';
import { Deployment } from '../nats/deployment.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const CI = process.env.CI === 'true' || process.env.CI === '1';
/** The host of the second deployment that runs beside the all-in-one (where NATS is). */
const OTHER_HOST = 'other-deployment-host';

/** What the README's quick start tells a user, read from the README itself so that the two cannot drift. */
const quickStart = {
  /** The lines `npm start` prints, as the README shows them. */
  banner: section(/It prints the URLs:\s*```\n([\s\S]*?)```/, 'the printed URLs')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean),
  /** `API=…` of the curl walk. */
  api: section(/^API=(\S+)$/m, "the curl walk's API="),
  /** The CLI command it gives, after `npm run cyborg --`. */
  cli: section(/`npm run cyborg -- (accelerator list)`/, 'the CLI command').split(' '),
};

function section(re: RegExp, what: string): string {
  const m = re.exec(README);
  if (!m) throw new Error(`README.md's quick start no longer shows ${what}: update this test with it`);
  return m[1]!;
}

/**
 * The README's quick start, word for word, as a new user follows it: `npm start` in the checkout,
 * the visualizer URL it prints opened in Chromium, the CLI with no flags, the curl walk, and a
 * Ctrl-C-like stop. Nothing here builds a URL the program did not print.
 *
 * The README's defaults are used where this run can own them: port 6680 unless it is taken here
 * (a developer's own `npm start`, another run of this test), and `.cyborg/` in the checkout unless
 * it already exists (a developer's data, which this test must neither read nor change). Otherwise
 * it falls back on what the README documents for that case — `CYBORG_PORT` for the server,
 * `CYBORG_URL` for the CLI, `CYBORG_DATA_DIR` for the state — the same code paths as the defaults.
 *
 * Where NATS is, it runs on a machine where another deployment already runs (issue 42): a
 * conductor, an agent and an api role started with the api role's own defaults. `npm start` and
 * the CLI with no flags must still reach the all-in-one, never the other one.
 */
describe.skipIf(!svc.browser && !CI)("the README's quick start, as written", () => {
  let port: number = PORTS.allInOne;
  let ownsPort = false;
  let dataDir: string | undefined;
  let ownsDefaultDataDir = false;
  let start: ProcessGroup;
  let browser: Browser | undefined;
  let printed: { api: string; v2: string; visualizer: string };
  let names: string[];
  /** The environment of the user's shell: nothing of the test's own services or settings. */
  const env: NodeJS.ProcessEnv = userShellEnv();

  /** Another deployment on the same machine (issue 42): its api role up on its own defaults. */
  let other: Deployment | undefined;

  beforeAll(async () => {
    if (svc.nats) {
      other = new Deployment(svc.nats);
      await other.conductor('other-conductor');
      await other.agent(OTHER_HOST);
      await other.apiRoleWithItsDefaults('other-api', await isFree(PORTS.api));
    }
    ownsPort = claimDefaultPort() && (await isFree(PORTS.allInOne));
    if (!ownsPort) {
      releaseDefaultPort();
      port = await freePort();
      env.CYBORG_PORT = String(port);
      console.warn(`readme test: port ${PORTS.allInOne} is taken here; the all-in-one gets CYBORG_PORT=${port} and the CLI CYBORG_URL instead`);
    }
    try {
      mkdirSync(join(ROOT, '.cyborg'));
      ownsDefaultDataDir = true;
    } catch {
      dataDir = mkdtempSync(join(tmpdir(), 'cyborg-readme-'));
      env.CYBORG_DATA_DIR = dataDir;
      console.warn(
        `readme test: .cyborg/ exists in the checkout (a developer's data, or another run's); the all-in-one keeps its state in CYBORG_DATA_DIR=${dataDir} instead`,
      );
    }

    start = new ProcessGroup('npm', ['start'], { cwd: ROOT, env });
    // `prestart` builds the page with Vite when it is stale, then the embedded database starts: on
    // a busy two-core machine that is a minute or more.
    const m = await start.waitFor(/API:\s+(\S+)\n\s*Cyborg v2:\s+(\S+)\n\s*Visualizer:\s+(\S+)\n/, 'the URLs of the quick start', 300_000);
    printed = { api: m[1]!, v2: m[2]!, visualizer: m[3]! };
    if (!ownsPort) env.CYBORG_URL = new URL(printed.api).origin;
  }, 320_000);

  afterAll(async () => {
    await other?.stop();
    await browser?.close();
    if (start && !start.gone) start.kill();
    if (ownsDefaultDataDir) rmSync(join(ROOT, '.cyborg'), { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (ownsPort) releaseDefaultPort();
  });

  it('prints the URLs the README shows', () => {
    const expected = quickStart.banner.map((l) => (ownsPort ? l : l.replace(`:${PORTS.allInOne}`, `:${port}`)));
    const lines = start.output.split('\n').map((l) => l.trim());
    for (const line of expected) expect(lines).toContain(line);
    expect(start.output).not.toMatch(/browsers refuse port/);
    // Issue 42: a first start (the build `prestart` runs on a fresh checkout) warns of nothing.
    expect(start.output.split('\n').filter((l) => /\bwarn(ing)?\b/i.test(l))).toEqual([]);
    if (ownsPort) expect(`${quickStart.api}/accelerators`).toBe(printed.api);
  });

  it("lists the fake accelerators at the printed API URL (the curl walk's first step)", async () => {
    const list = await call<{ accelerators: { id: string; name: string; deviceType: string; state: string }[] }>('GET', printed.api);
    expect(list.status).toBe(200);
    const { accelerators } = list.body;
    expect(accelerators.map((a) => a.deviceType)).toEqual(expect.arrayContaining(['FPGA', 'GPU']));
    expect(accelerators.every((a) => a.state === 'inactive')).toBe(true);
    names = accelerators.map((a) => a.name);
  });

  it('opens the printed visualizer URL in Chromium and shows every fake accelerator, live', async () => {
    browser = await launchChromium(svc.browser ?? '/usr/bin/chromium');
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const res = await page.goto(printed.visualizer);
    expect(res?.status()).toBe(200);
    await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), { timeout: 30_000 }).toBe('live');
    for (const name of names) {
      await expect.poll(() => page.locator(`[data-testid=accelerators] [data-name="${name}"]`).count(), { timeout: 15_000 }).toBe(1);
    }
    await expect.poll(() => page.locator('[data-testid=state-counts] [data-state=inactive] b').textContent(), { timeout: 15_000 }).toBe(String(names.length));
  }, 120_000);

  it(`runs \`npm run cyborg -- ${quickStart.cli.join(' ')}\` with no flags and lists them`, async () => {
    const { code, output } = await npm(['run', 'cyborg', '--', ...quickStart.cli]);
    expect(code, output).toBe(0);
    for (const name of names) expect(output).toContain(name);
    // Not the other deployment's, whose api role runs beside it on its own defaults.
    expect(output).not.toContain(OTHER_HOST);
  }, 120_000);

  it('walks one FPGA through its lifecycle as the curl lines do', async () => {
    const api = printed.api.replace(/\/accelerators$/, '');
    const fpgas = await call<{ accelerators: { id: string }[] }>('GET', `${api}/accelerators?type=FPGA`);
    const id = fpgas.body.accelerators[0]!.id;
    const post = (action: string, body?: Record<string, unknown>) =>
      call<{ state: string; code?: string; allowed?: string[] }>('POST', `${api}/accelerators/${id}/${action}`, body);
    expect((await post('enable')).body.state).toBe('ready');
    expect((await post('program', { bitstreamId: 'bs-1' })).body.state).toBe('programmed');
    expect((await post('attach', { instanceUuid: '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11' })).body.state).toBe('attached');
    const refused = await post('remove');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'accelerator.transition_invalid', state: 'attached', allowed: ['ATTACH', 'DETACH'] });
    expect((await post('detach')).body.state).toBe('programmed');
  });

  it("reaches the API on a port browsers refuse (Cyborg's 6665–6669), as the README promises of the CLI", async (ctx) => {
    // A plain TCP relay on a refused port: the API answering there is the running all-in-one.
    const target = Number(new URL(printed.api).port);
    const relay = createServer((c) => {
      const s = connect(target, '127.0.0.1');
      c.pipe(s).pipe(c);
      c.on('error', () => s.destroy());
      s.on('error', () => c.destroy());
    });
    const blocked = await listenOnFirst(relay, [6666, 6665, 6667, 6668, 6669]);
    if (blocked === undefined) return ctx.skip('every port 6665–6669 is taken on this machine');
    try {
      const url = `http://127.0.0.1:${blocked}`;
      // What the CLI must not be: Node's fetch refuses this port outright.
      await expect(fetch(`${url}/cyborg/v1/accelerators`)).rejects.toMatchObject({ cause: { message: 'bad port' } });
      const { code, output } = await npm(['run', 'cyborg', '--', ...quickStart.cli, '--url', url]);
      expect(code, output).toBe(0);
      for (const name of names) expect(output).toContain(name);
    } finally {
      await new Promise((r) => relay.close(r));
    }
  }, 120_000);

  it('stops cleanly on SIGTERM, as Ctrl-C in the terminal stops it, and starts again with its state', async () => {
    // To the whole group, as a terminal (or systemd) signals it: npm alone passes the signal to
    // its shell, which dies of it and leaves the program running.
    await stop(start);
    expect(start.output).toMatch(/"msg":"shutting down"/);
    expect(start.output).not.toMatch(/shutdown failed|"level":(50|60)/);

    // `npm start` again: the same data (README: "data under .cyborg/"), the FPGA still programmed.
    start = new ProcessGroup('npm', ['start'], { cwd: ROOT, env });
    const again = (await start.waitFor(/API:\s+(\S+)\n/, 'the URLs of the second start', 300_000))[1]!;
    expect(again).toBe(printed.api);
    const fpga = await call<{ accelerators: { state: string }[] }>('GET', `${again}?type=FPGA`);
    expect(fpga.body.accelerators.map((a) => a.state)).toEqual(['programmed']);
    await stop(start);
  }, 360_000);

  async function stop(run: ProcessGroup): Promise<void> {
    run.signal('SIGTERM');
    const exit = await run.exited;
    // npm passes SIGTERM on and dies of it, as npm does (or exits 0 if the program ended first).
    expect([0, null]).toContain(exit.code);
    await eventually(() => run.gone, {
      what: `every process of \`npm start\` to exit; it printed:\n${run.output.slice(-4000)}`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
  }

  /** `npm …` in the checkout with the user's environment; its exit code and everything it printed. */
  function npm(args: string[]): Promise<{ code: number; output: string }> {
    return new Promise((resolve) => {
      execFile('npm', args, { cwd: ROOT, env, timeout: 100_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` });
      });
    });
  }
});

/**
 * The environment a user's shell would have: without the test run's services (DATABASE_URL,
 * NATS_URL, …), every Cyborg setting and vitest's own variables, so the defaults are the README's.
 */
function userShellEnv(): NodeJS.ProcessEnv {
  const settings = new Set(OPTIONS.flatMap((o) => (o.env ? [o.env] : [])));
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !settings.has(k) && !k.startsWith('CYBORG_') && !k.startsWith('VITEST') && k !== 'NODE_ENV' && k !== 'TEST'),
  );
}

/** Like curl: any port, the body as JSON whatever the status. */
async function call<T>(method: 'GET' | 'POST', url: string, body?: Record<string, unknown>): Promise<{ status: number; body: T }> {
  const res = await request(url, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: (await res.body.json()) as T };
}

// Runs of this test (two `npm test` at once, in this checkout or another) take turns on 6680.
const PORT_LOCK = join(tmpdir(), `cyborg-readme-port-${PORTS.allInOne}.lock`);

function claimDefaultPort(): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      mkdirSync(PORT_LOCK);
      writeFileSync(join(PORT_LOCK, 'pid'), String(process.pid));
      return true;
    } catch {
      if (ownerAlive()) return false;
      rmSync(PORT_LOCK, { recursive: true, force: true }); // left by a run that died
    }
  }
  return false;
}

function ownerAlive(): boolean {
  try {
    process.kill(Number(readFileSync(join(PORT_LOCK, 'pid'), 'utf8')), 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function releaseDefaultPort(): void {
  try {
    if (Number(readFileSync(join(PORT_LOCK, 'pid'), 'utf8')) === process.pid) rmSync(PORT_LOCK, { recursive: true, force: true });
  } catch {
    // not ours, or already gone
  }
}

function listen(server: Server, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

async function isFree(port: number): Promise<boolean> {
  try {
    const s = await listen(createServer(), port);
    await new Promise((r) => s.close(r));
    return true;
  } catch {
    return false;
  }
}

/** The first of `ports` that `server` could listen on, or undefined when all are taken. */
async function listenOnFirst(server: Server, ports: number[]): Promise<number | undefined> {
  for (const p of ports) {
    try {
      await listen(server, p);
      return p;
    } catch {
      // taken: the next one
    }
  }
  return undefined;
}
