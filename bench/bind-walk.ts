/**
 * `npm run bench:bind-walk`: how many of the project's source files one Nova bind crosses (issue 25
 * asks for fewer than the ~40 it crossed). The all-in-one is started in this process as `cyborg
 * all-in-one` starts it (embedded PGlite in a temp data dir, the in-process bus, the fake driver, a
 * free port); its fake FPGA is enabled through the operator API, a device profile and an ARQ are
 * created through the v2 API, and the ARQ is bound by Nova's PATCH over HTTP. V8's precise
 * coverage (call counts per function) is taken just before the PATCH and again once the ARQ reads
 * Bound: a file counts when one of its functions was called in between.
 *
 * The api, the bus, the conductor and the agent all run in this one process, so the walk is both
 * sides of the bind: what the api role runs and what the conductor and agent run behind it.
 *
 * One warm-up cycle (create, bind, delete) runs first so that lazy one-time code (first imports of
 * a route, schema compilation) is not counted; then RUNS binds are measured and the figure is the
 * files every one of them crossed, since the agent's heartbeat and health timers may fire inside a
 * window and add files the bind does not need (listed apart).
 *
 * `--enable`: the window is on an operator's enable instead (POST /cyborg/v1/accelerators/{id}/enable,
 * then GET until ready; each measured enable follows a disable outside the window).
 *
 * `--baseline <ref>`: the same script, copied into a git worktree of that commit under /tmp, in a
 * process of its own; both counts and their ratio. It imports only what old commits have too
 * (roles/all-in-one.ts's startAllInOne, config/load.ts's loadConfig), talks HTTP with Node's own
 * fetch, and computes the fake FPGA's provider uuid itself.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(import.meta.dirname, '..');
const SELF = fileURLToPath(import.meta.url);
const RUNS = 3;
/** What the window is on: a Nova bind, or an operator's enable (`--enable`). */
const WINDOW: 'bind' | 'enable' = process.argv.includes('--enable') ? 'enable' : 'bind';
const HOST = 'bind-walk-host';
// Nova's headers in noauth mode, as the api benches send them.
const HEADERS = { 'x-auth-token': 'admin' };
/**
 * The API's words this script waits for, spelled here rather than taken from machines/: the
 * script also runs in the worktree of an older commit, whose machines/ has no names objects.
 */
const WIRE = { inactive: 'inactive', ready: 'ready', bound: 'Bound' } as const;

/** The state of the fake FPGA, as the operator API answers it. */
type Fpga = () => Promise<{ id: string; state: string } | undefined>;
type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;

/** One disable (outside the window) and one enable (`around` wraps the enable and the wait for ready), RUNS times after a warm-up. */
async function enableWalks(call: Call, fpga: Fpga, take: (around: () => Promise<void>) => Promise<void>): Promise<void> {
  const id = (await fpga())!.id;
  const flip = async (verb: 'enable' | 'disable', state: string): Promise<void> => {
    const r = await call('POST', `/cyborg/v1/accelerators/${id}/${verb}`);
    if (r.status >= 300) throw new Error(`${verb}: ${r.status} ${JSON.stringify(r.json)}`);
    await until(`the fake FPGA to be ${state}`, async () => ((await fpga())?.state === state ? true : undefined));
  };
  if ((await fpga())?.state === WIRE.ready) await flip('disable', WIRE.inactive);
  await flip('enable', WIRE.ready);
  for (let i = 0; i < RUNS; i++) {
    await flip('disable', WIRE.inactive);
    await take(() => flip('enable', WIRE.ready));
  }
}

interface Walk {
  /** Files (relative to the repo root) every measured bind crossed. */
  files: string[];
  /** Files only some of the measured binds crossed (timers firing inside a window). */
  sometimes: string[];
  /** Per counted file, the functions the first measured bind called in it (`--functions`). */
  functions?: Record<string, string[]>;
}

/** `uuid3(NAMESPACE_DNS, name)`: how the fake driver names its devices' providers (Placement's uuid in Nova's allocation). */
function uuid3(name: string): string {
  const h = createHash('md5').update(Buffer.from('6ba7b8109dad11d180b400c04fd430c8', 'hex')).update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x30;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) {
    const v = await check();
    if (v !== undefined) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The walk of this checkout (the one this file sits in), measured in this process. */
async function measure(): Promise<Walk> {
  // Before the project's modules load: coverage of code compiled earlier may be incomplete.
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  const { pino } = await import('pino');
  const { loadConfig } = await import('../config/index.js');
  const { startAllInOne } = await import('../roles/all-in-one.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'cyborg-bind-walk-'));
  // No environment: DATABASE_URL or a config file would take it off the embedded defaults.
  const overrides = { host: HOST, dataDir, listen: { address: '127.0.0.1', port: 0 } };
  // Older commits' loadConfig takes no third argument; the role's defaults are what `all-in-one` gets now.
  const config = (loadConfig as (o: typeof overrides, env: Record<string, string>, opts: { role: 'all-in-one' }) => ReturnType<typeof loadConfig>)(
    overrides,
    {},
    { role: 'all-in-one' },
  );
  const running = await startAllInOne(config, pino({ level: 'silent' }));
  try {
    const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
      const res = await fetch(`${running.url}${path}`, {
        method,
        headers: body === undefined ? HEADERS : { ...HEADERS, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : null };
    };
    const fpga = async (): Promise<{ id: string; state: string } | undefined> =>
      ((await call('GET', '/cyborg/v1/accelerators?type=FPGA')).json?.accelerators as { id: string; state: string }[] | undefined)?.[0];
    const found = await until('the agent to report its fake FPGA', fpga);
    if (WINDOW === 'enable') {
      const walks: Map<string, string[]>[] = [];
      await enableWalks(call, fpga, async (enable) => {
        await session.post('Profiler.takePreciseCoverage');
        await enable();
        const { result } = await session.post('Profiler.takePreciseCoverage');
        walks.push(filesCalled(result));
      });
      return common(walks);
    }
    if (found.state === WIRE.inactive) {
      const r = await call('POST', `/cyborg/v1/accelerators/${found.id}/enable`);
      if (r.status >= 300) throw new Error(`enable: ${r.status} ${JSON.stringify(r.json)}`);
    }
    await until('the fake FPGA to be ready', async () => ((await fpga())?.state === WIRE.ready ? true : undefined));
    const dp = await call('POST', '/v2/device_profiles', [{ name: 'walk-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] }]);
    if (dp.status !== 201) throw new Error(`device profile: ${dp.status} ${JSON.stringify(dp.json)}`);

    /** One Nova boot: create, bind, wait until resolved; `around` wraps the bind and the wait. */
    const boot = async (around: (bind: () => Promise<void>) => Promise<void>): Promise<void> => {
      const instance = randomUUID();
      const created = await call('POST', '/v2/accelerator_requests', { device_profile_name: 'walk-dp' });
      if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.json)}`);
      const uuid = (created.json as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
      await around(async () => {
        const bound = await call('PATCH', '/v2/accelerator_requests', {
          [uuid]: [
            { op: 'add', path: '/hostname', value: HOST },
            { op: 'add', path: '/device_rp_uuid', value: uuid3(`${HOST}_FakeDevice`) },
            { op: 'add', path: '/instance_uuid', value: instance },
          ],
        });
        if (bound.status !== 202) throw new Error(`bind: ${bound.status} ${JSON.stringify(bound.json)}`);
        for (;;) {
          const r = await call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`);
          if (r.status === 200) {
            const state = (r.json as { arqs: { state: string }[] }).arqs[0]?.state;
            if (state !== WIRE.bound) throw new Error(`resolved as ${state}`);
            return;
          }
          if (r.status !== 423) throw new Error(`resolved query: ${r.status}`);
        }
      });
      const deleted = await call('DELETE', `/v2/accelerator_requests?instance=${instance}`);
      if (deleted.status !== 204) throw new Error(`delete: ${deleted.status}`);
      // The ARQ's unbind reaches the device after the delete answers; the next bind needs it free.
      await until('the fake FPGA to be free', async () => ((await fpga())?.state === WIRE.ready ? true : undefined));
    };

    await boot((bind) => bind());
    const walks: Map<string, string[]>[] = [];
    for (let i = 0; i < RUNS; i++) {
      await boot(async (bind) => {
        // takePreciseCoverage resets the counters: the second take holds only the calls in between.
        await session.post('Profiler.takePreciseCoverage');
        await bind();
        const { result } = await session.post('Profiler.takePreciseCoverage');
        walks.push(filesCalled(result));
      });
    }
    return common(walks);
  } finally {
    await session.post('Profiler.stopPreciseCoverage');
    session.disconnect();
    await running.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The files every walk crossed, those only some did, and the first walk's functions per file. */
function common(walks: Map<string, string[]>[]): Walk {
  const files = [...walks[0]!.keys()].filter((f) => walks.every((w) => w.has(f))).sort();
  const sometimes = [...new Set(walks.flatMap((w) => [...w.keys()]))].filter((f) => !files.includes(f)).sort();
  return { files, sometimes, functions: Object.fromEntries(files.map((f) => [f, walks[0]!.get(f)!])) };
}

/** The project's source files (under ROOT, not node_modules, not this script) with a function called, and those functions. */
function filesCalled(scripts: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const s of scripts) {
    if (!s.url.startsWith('file://')) continue;
    const path = fileURLToPath(s.url.split('?')[0]!);
    const rel = relative(ROOT, path);
    if (rel.startsWith('..') || rel.split(sep).includes('node_modules') || path === SELF) continue;
    const called = s.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0).map((f) => f.functionName || '(anonymous)');
    if (called.length > 0) out.set(rel, [...new Set(called)]);
  }
  return out;
}

/** The files by room (top-level folder), one line a room. */
function byRoom(files: string[]): string {
  const rooms = new Map<string, string[]>();
  for (const f of files) {
    const room = f.includes(sep) ? f.slice(0, f.indexOf(sep)) : '.';
    rooms.set(room, [...(rooms.get(room) ?? []), f.slice(room === '.' ? 0 : room.length + 1)]);
  }
  return [...rooms]
    .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    .map(([room, fs]) => `  ${room}/ (${fs.length}): ${fs.join(', ')}`)
    .join('\n');
}

/** A worktree of `ref` under /tmp with its dependencies and this script. */
function worktreeOf(ref: string): { root: string; sha: string; deps: string } {
  const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT, encoding: 'utf8' }).trim();
  const root = `/tmp/cyborg-bind-walk-${sha}`;
  if (!existsSync(root)) execFileSync('git', ['worktree', 'add', '--detach', root, sha], { cwd: ROOT, stdio: 'ignore' });
  let deps = 'its own npm ci';
  if (!existsSync(join(root, 'node_modules'))) {
    try {
      execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: root, stdio: 'ignore', timeout: 600_000 });
    } catch {
      // Offline or a registry refusing: this tree's packages (a superset of older commits' so far) serve.
      rmSync(join(root, 'node_modules'), { recursive: true, force: true });
      symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
      deps = "this tree's node_modules (npm ci failed there)";
    }
  } else {
    deps = 'the node_modules already in that worktree';
  }
  copyFileSync(SELF, join(root, 'bench', 'bind-walk.ts'));
  return { root, sha, deps };
}

/** The walk of the checkout at `root`, in a process of its own. */
function walkIn(root: string): Promise<Walk> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', 'bench/bind-walk.ts', '--json', ...(WINDOW === 'enable' ? ['--enable'] : [])], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BIND-WALK '));
      if (line) resolve(JSON.parse(line.slice('BIND-WALK '.length)) as Walk);
      else reject(new Error(`exited ${code}: ${out.slice(-2_000)}`));
    });
  });
}

const args = process.argv.slice(2);
if (args.includes('--json')) {
  console.log(`BIND-WALK ${JSON.stringify(await measure())}`);
  process.exit(0);
}
const at = args.indexOf('--baseline');
const base = at >= 0 ? worktreeOf(args[at + 1] ?? 'HEAD') : undefined;
const theirs = base
  ? await walkIn(base.root).catch((err: unknown) => {
      console.log(`baseline ${base.sha}: failed to run: ${String(err)}`);
      return undefined;
    })
  : undefined;
const ours = await walkIn(ROOT);
const what =
  WINDOW === 'enable'
    ? "one operator's enable (POST /cyborg/v1/accelerators/{id}/enable, then GET until ready)"
    : 'one Nova bind (PATCH /v2/accelerator_requests, then GET until Bound)';
console.log(
  `${WINDOW} walk: project source files in which a function ran during ${what},\n` +
    `all-in-one in one process: the api role, the in-process bus, the conductor and the agent, so both sides of the bus are counted.\n` +
    `Files every one of ${RUNS} measured ${WINDOW}s crossed, after one warm-up cycle; node_modules excluded.\n`,
);
console.log(`this tree: ${ours.files.length} files\n${byRoom(ours.files)}`);
if (ours.sometimes.length) console.log(`  not in every bind (timers), not counted: ${ours.sometimes.join(', ')}`);
if (args.includes('--functions') && ours.functions) {
  console.log('\nfunctions called in each file (the first measured bind):');
  for (const [file, fns] of Object.entries(ours.functions)) console.log(`  ${file}: ${fns.join(', ')}`);
}
if (base && theirs) {
  console.log(`\nbaseline ${base.sha} (dependencies: ${base.deps}): ${theirs.files.length} files\n${byRoom(theirs.files)}`);
  if (theirs.sometimes.length) console.log(`  not in every bind (timers), not counted: ${theirs.sometimes.join(', ')}`);
  console.log(
    `\n${ours.files.length} files against ${theirs.files.length} at ${base.sha}: ${(ours.files.length / theirs.files.length).toFixed(2)}× (issue 25 asks for fewer: below 1×)`,
  );
}
process.exit(0);
