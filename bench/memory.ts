/**
 * bench:memory — what the all-in-one holds (issue 43: an all-in-one in 256 MB). For this tree and
 * a baseline commit's worktree, in the same run: `npm start` on a fresh data directory and a free
 * port, exactly as the README's quick start runs it; the VmRSS of every process it leaves running
 * once idle (npm's own process apart: it is npm, not cyborg, and the same for both trees); then
 * 1,000 ARQ lifecycles over HTTP as Nova makes them (create → bind → resolved → delete) and the
 * same figures idle again. Prints each process, the total, the ratio to the 256 MiB goal and to
 * the baseline.
 *
 *   npm run bench:memory [-- --baseline ded6a41] [--cycles 1000] [--settle 20] [--rounds 1]
 *
 * The baseline is a worktree of that commit under /tmp (made once, node_modules hard-linked from
 * this tree's). The machine is shared: with --rounds > 1 the trees alternate and medians print.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { AcceleratorStates } from '../machines/index.js';
import { call, cycle } from './api/lifecycle.js';

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string', default: 'ded6a41' },
    cycles: { type: 'string', default: '1000' },
    settle: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '1' },
  },
});
const CYCLES = Number(args.cycles);
const SETTLE_S = Number(args.settle);
const ROUNDS = Number(args.rounds);
const GOAL_MIB = 256;
const ROOT = join(import.meta.dirname, '..');

interface Proc {
  pid: number;
  what: string;
  rssMiB: number;
}
interface Sample {
  procs: Proc[];
  /** Every process npm start left running, npm's own excepted. */
  totalMiB: number;
  npmMiB: number;
}
interface Run {
  tree: string;
  startS: number;
  idle: Sample;
  after: Sample;
  cyclesPerS: number;
}

const rssOf = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};
const ppidOf = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
const cmdOf = (pid: number): string => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');

/** `root` and every process under it, now. */
function tree(root: number): number[] {
  const all = readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
  const parent = new Map<number, number>();
  for (const pid of all)
    try {
      parent.set(pid, ppidOf(pid));
    } catch {
      // gone meanwhile
    }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, pp] of parent) if (pp === out[i]) out.push(pid);
  return out;
}

function sample(npm: number): Sample {
  const procs: Proc[] = [];
  for (const pid of tree(npm))
    try {
      procs.push({ pid, what: cmdOf(pid).slice(0, 90), rssMiB: rssOf(pid) });
    } catch {
      // exited between the listing and the read
    }
  const npmMiB = procs.find((p) => p.pid === npm)?.rssMiB ?? 0;
  return { procs, npmMiB, totalMiB: procs.filter((p) => p.pid !== npm).reduce((s, p) => s + p.rssMiB, 0) };
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((ok) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => ok(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** A worktree of `ref` under /tmp, made once, with this tree's node_modules hard-linked in. */
function worktreeOf(ref: string): { root: string; sha: string } {
  const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT, encoding: 'utf8' }).trim();
  const root = `/tmp/base-${sha}-mem`;
  if (!existsSync(root)) execFileSync('git', ['worktree', 'add', '--detach', root, sha], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(join(root, 'node_modules'))) cpSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), { recursive: true });
  return { root, sha };
}

/** Sends SIGINT to the group (Ctrl-C), then SIGKILL if it lingers. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid!, 'SIGINT');
  if ((await Promise.race([exited.then(() => true), delay(30_000).then(() => false)])) === false) process.kill(-child.pid!, 'SIGKILL');
}

async function measure(label: string, root: string): Promise<Run> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cyborg-mem-'));
  const port = await freePort();
  const env = { ...process.env, CYBORG_DATA_DIR: dataDir, CYBORG_PORT: String(port) };
  const t0 = performance.now();
  const child = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const url = `http://127.0.0.1:${port}`;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${label}: npm start exited ${child.exitCode}: ${out.slice(-2000)}`);
      if (out.includes('cyborg all-in-one is up')) break;
      if (performance.now() - t0 > 600_000) throw new Error(`${label}: not up after 600 s: ${out.slice(-2000)}`);
      await delay(200);
    }
    const startS = (performance.now() - t0) / 1000;
    await delay(SETTLE_S * 1000);
    const idle = sample(child.pid!);

    const pool = new Pool(url, { connections: 2 });
    const fpga = ((await call(pool, 'GET', '/cyborg/v1/accelerators?type=FPGA')).json as { accelerators: { id: string; host: string; state: string }[] })
      .accelerators[0]!;
    if (fpga.state === AcceleratorStates.inactive) await call(pool, 'POST', `/cyborg/v1/accelerators/${fpga.id}/enable`);
    for (let i = 0; i < 100; i++) {
      const a = (await call(pool, 'GET', `/cyborg/v1/accelerators/${fpga.id}`)).json as { state: string };
      if (a.state === AcceleratorStates.ready) break;
      await delay(100);
    }
    const dp = await call(pool, 'POST', '/v2/device_profiles', [
      { name: 'bench-dp', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required' }] },
    ]);
    if (dp.status !== 201) throw new Error(`${label}: device profile: ${dp.status} ${JSON.stringify(dp.json)}`);
    const c0 = performance.now();
    for (let i = 0; i < CYCLES; i++) await cycle(pool, fpga.host);
    const cyclesPerS = CYCLES / ((performance.now() - c0) / 1000);
    await pool.close();
    await delay(SETTLE_S * 1000);
    const after = sample(child.pid!);
    return { tree: label, startS, idle, after, cyclesPerS };
  } finally {
    await stop(child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const mib = (n: number): string => `${n.toFixed(1)} MiB`;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function print(r: Run): void {
  for (const [when, s] of [
    ['idle after start', r.idle],
    [`idle after ${CYCLES} ARQ lifecycles`, r.after],
  ] as const) {
    console.log(`  ${when}: ${mib(s.totalMiB)} (${(s.totalMiB / GOAL_MIB).toFixed(2)}× the ${GOAL_MIB} MiB goal); npm's own process ${mib(s.npmMiB)} apart`);
    for (const p of s.procs) console.log(`    ${String(p.pid).padStart(7)} ${mib(p.rssMiB).padStart(10)}  ${p.what}`);
  }
  console.log(`  up in ${r.startS.toFixed(1)} s; ${r.cyclesPerS.toFixed(1)} lifecycles/s sequentially`);
}

const base = worktreeOf(args.baseline!);
console.log(`bench:memory — npm start on a fresh data dir, idle VmRSS; this tree against ${base.sha} (${base.root}); Node ${process.versions.node}`);
console.log(`${CYCLES} ARQ lifecycles, ${SETTLE_S} s settle before each sample, ${ROUNDS} round(s); a shared machine: medians over rounds\n`);
const ours: Run[] = [];
const theirs: Run[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const b = await measure(base.sha, base.root);
  console.log(`${base.sha} (round ${i + 1}):`);
  print(b);
  theirs.push(b);
  const o = await measure('this tree', ROOT);
  console.log(`this tree (round ${i + 1}):`);
  print(o);
  ours.push(o);
}
for (const key of ['idle', 'after'] as const) {
  const o = median(ours.map((r) => r[key].totalMiB));
  const t = median(theirs.map((r) => r[key].totalMiB));
  console.log(
    `\n${key === 'idle' ? 'idle after start' : `after ${CYCLES} lifecycles`}: this tree ${mib(o)} — ${(o / GOAL_MIB).toFixed(2)}× the ${GOAL_MIB} MiB goal (${o <= GOAL_MIB ? 'met' : 'missed'}); ${base.sha} ${mib(t)}: ${(o / t).toFixed(2)}× of it`,
  );
}
console.log(
  `npm's own process (median): this tree ${mib(median(ours.map((r) => r.idle.npmMiB)))}, ${base.sha} ${mib(median(theirs.map((r) => r.idle.npmMiB)))}`,
);
