/**
 * `npm run bench:slow-readers`: what clients that never read cost the api. An api (on a
 * conductor in this process, memory journal) holds --arqs ARQs (default 20,000); --clients
 * clients (default 150, in a child process of their own) each ask `GET /v2/accelerator_requests`
 * — the whole list, as Nova and tempest ask it — and never read the answer. Measured in the same
 * run: the api's RSS and `/healthz` latency (p50, p99, max of sequential requests: --probes
 * idle; for 5 s from the moment the readers ask) idle, then with the readers, then after they
 * left — for the streamed list, and for the same list answered as one buffered body.
 *
 * Before the list was streamed (api/stream-list.ts), each such reader held the whole answer as
 * text: 150 of them raised the api by 1.2 GiB and made `/healthz` take 20.7 s (issue 26).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { request } from 'undici';
import { Conductor } from '../actors/conductor/index.js';
import { MemoryJournal } from '../actors/runtime/index.js';
import { buildApi } from '../api/server.js';
import { arqBody } from '../api/v2/accelerator-requests.js';
import { InProcessBus } from '../bus/index.js';
import { silentLogger } from '../config/index.js';
import { pct } from './api/lifecycle.js';

const args = process.argv.slice(2);
const flag = (name: string, def: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const ARQS = flag('arqs', 20_000);
const CLIENTS = flag('clients', 150);
const PROBES = flag('probes', 50);

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;
function rss(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss;
}

/** `/healthz` asked one after another, PROBES times or for `forMs`: p50, p99 and max in ms. */
async function healthz(url: string, forMs = 0): Promise<{ p50: number; p99: number; max: number }> {
  const ms: number[] = [];
  const until = performance.now() + forMs;
  for (let i = 0; i < PROBES || performance.now() < until; i++) {
    const t0 = performance.now();
    const res = await request(`${url}/healthz`);
    await res.body.dump();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: pct(ms, 50), p99: pct(ms, 99), max: ms.at(-1)! };
}
const lat = (h: { p50: number; p99: number; max: number }): string => `p50 ${h.p50.toFixed(1)} ms, p99 ${h.p99.toFixed(1)} ms, max ${h.max.toFixed(1)} ms`;

/** CLIENTS readers of `path` that never read: the api's RSS and /healthz while they hold it, and after. */
async function readers(url: string, path: string, what: string, idleRss: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'api', 'slow-reader-clients.ts'), url, String(CLIENTS), path], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => (b.toString().includes('sent') ? resolve() : undefined));
    child.once('exit', (code) => reject(new Error(`slow readers exited (${code})`)));
  });
  // Probed from the moment they asked, through the api writing what their sockets take, for 5 s.
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 100);
  const busy = await healthz(url, 5_000);
  const held = rss();
  clearInterval(sampler);
  peak = Math.max(peak, held);
  child.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 1_500));
  const after = rss();
  console.log(`  ${what}: api RSS ${mib(held)} (+${mib(held - idleRss)}; peak +${mib(peak - idleRss)}), ${mib(after)} after they left; /healthz ${lat(busy)}`);
}

async function main(): Promise<void> {
  const log = silentLogger();
  const bus = new InProcessBus(log);
  const timing = { driverOpTimeoutMs: 30_000, staleAfterMs: 3_600_000, lostAfterMs: 7_200_000, heartbeatIntervalMs: 3_600_000 };
  const conductor = new Conductor({ bus, journal: new MemoryJournal(), log, timing });
  await conductor.start();
  const profile = `slow-readers-${randomUUID().slice(0, 8)}`;
  await conductor.documents.createProfile({
    uuid: randomUUID(),
    name: profile,
    description: '',
    groups: [{ 'resources:FPGA': '1' }],
    createdAt: new Date().toISOString(),
    updatedAt: null,
  });
  const t0 = performance.now();
  for (let i = 0; i < ARQS; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, ARQS - i) }, () => conductor.createArq({ deviceProfileName: profile, deviceProfileGroupId: 0, projectId: 'bench' })),
    );
  }
  const app = await buildApi({ control: conductor, log });
  app.get('/bench/arqs-buffered', async () => ({ arqs: conductor.listArqs().map((a) => arqBody(a, conductor, '')) }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const one = await request(`${url}/v2/accelerator_requests`, { headers: { 'x-auth-token': 'admin' } });
  const bytes = (await one.body.arrayBuffer()).byteLength;
  console.log(`${ARQS} ARQs created in ${((performance.now() - t0) / 1000).toFixed(1)} s; the whole list is ${mib(bytes)} of JSON`);

  const idleRss = rss();
  const idle = await healthz(url);
  console.log(`\n${CLIENTS} clients reading nothing of the whole list (${ARQS} ARQs), against the idle api in the same run:`);
  console.log(`  idle: api RSS ${mib(idleRss)}; /healthz ${lat(idle)}`);
  await readers(url, '/v2/accelerator_requests', 'streamed (GET /v2/accelerator_requests)', idleRss);
  // The same list answered the way it was before it was streamed: one JSON text per request.
  await readers(url, '/bench/arqs-buffered', 'as one buffered body (the answer before)', idleRss);
  await app.close();
  await conductor.stop();
}

await main();
