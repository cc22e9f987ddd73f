/**
 * bench/ui: how long a committed transition takes to show on the visualizer, measured in the
 * browser, with 10,000 accelerators on the page and a stream of 200 transitions per second.
 *
 *   npm run bench:ui        (HOSTS=100 RATE=200 SECONDS=20 to change the load)
 *
 * The API stamps each event with the wall-clock time the event hub announced its commit; the
 * page records, after the render that showed it, `now - committedAt` (same machine, same clock).
 * Baseline, measured in the same run: the same page and fleet under a trickle of 10 transitions
 * per second — so the ratio says what the load itself costs — and the bound of one second for
 * "shows up live".
 */
import { mkdirSync } from 'node:fs';
import { InProcessBus } from '../bus/index.js';
import { Agent } from '../actors/agent/index.js';
import { Conductor } from '../actors/conductor/index.js';
import { MemoryJournal } from '../actors/runtime/index.js';
import { buildApi } from '../api/server.js';
import { silentLogger } from '../config/index.js';
import { FakeDriver, DriverRegistry } from '../drivers/index.js';
import { launchChromium } from '../test/e2e/browser.js';
import { ensureUiBuilt } from '../ui/build.js';

const HOSTS = Number(process.env.HOSTS ?? 100);
const RATE = Number(process.env.RATE ?? 200);
const SECONDS = Number(process.env.SECONDS ?? 20);
const BASE_RATE = 10;
const BASE_SECONDS = Math.max(5, Math.round(SECONDS / 2));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Per host: Cyborg's fake FPGA + 9 GPUs + 10 NICs × 9 VFs = 100 accelerators.
const PER_HOST = { gpus: 9, nics: 10, vfsPerNic: 9 };

/** What ui/src/measure.ts puts on the page's window. */
interface PageGlobals {
  cyborgLatency: { take(): number[]; reset(): void };
}

const log = silentLogger();
const timing = { driverOpTimeoutMs: 30_000, staleAfterMs: 600_000, lostAfterMs: 1_200_000, heartbeatIntervalMs: 300_000 };

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function fleet(): Promise<{ conductor: Conductor; agents: Agent[]; bus: InProcessBus }> {
  const bus = new InProcessBus(log);
  const conductor = new Conductor({ bus, journal: new MemoryJournal(), log, timing });
  await conductor.start();
  const agents: Agent[] = [];
  for (let h = 0; h < HOSTS; h++) {
    const host = `bench-${String(h).padStart(3, '0')}`;
    const agent = new Agent({
      host,
      bus,
      drivers: new DriverRegistry([new FakeDriver({ host, ...PER_HOST })]),
      log,
      heartbeatIntervalMs: timing.heartbeatIntervalMs,
      discoveryIntervalMs: 3_600_000,
      telemetryIntervalMs: 0,
    });
    await agent.start();
    agents.push(agent);
  }
  return { conductor, agents, bus };
}

/**
 * Sends ENABLE to accelerators in turn at `rate / 2` requests per second (each ENABLE commits two
 * transitions: inactive → installing → ready) for `seconds`; returns the transitions committed.
 */
async function drive(conductor: Conductor, ids: string[], rate: number, seconds: number): Promise<number> {
  const startSeq = conductor.hub.cursor;
  const perTick = rate / 2 / 20; // requests per 50 ms tick
  const started = Date.now();
  let sent = 0;
  const inflight: Promise<unknown>[] = [];
  while (Date.now() - started < seconds * 1000) {
    const due = Math.floor(((Date.now() - started) / 50 + 1) * perTick);
    while (sent < due && ids.length > 0) {
      inflight.push(conductor.act(ids.pop()!, { type: 'ENABLE' }).catch(() => undefined));
      sent++;
    }
    await new Promise((r) => setTimeout(r, 50 - ((Date.now() - started) % 50)));
  }
  await Promise.all(inflight);
  return conductor.hub.cursor - startSeq;
}

async function main(): Promise<void> {
  await ensureUiBuilt();
  const { conductor, agents, bus } = await fleet();
  const total = conductor.listAccelerators().length;
  const app = await buildApi({ control: conductor, log });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const browser = await launchChromium(CHROMIUM);
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const loadStart = Date.now();
    const ids = conductor
      .listAccelerators({ state: 'inactive' })
      .map((a) => a.id)
      .reverse();
    await page.goto(`${url}/ui/#/${ids[ids.length - 1]}`);
    await page
      .locator('[data-testid=state-counts] .chip b')
      .first()
      .filter({ hasText: new RegExp(`^${total}$`) })
      .waitFor({ timeout: 120_000 });
    await page.waitForSelector('[data-testid=connection][data-state=live]');
    const loadMs = Date.now() - loadStart;

    const measure = async (rate: number, seconds: number): Promise<{ committed: number; rate: number; samples: number[] }> => {
      await page.evaluate(() => (globalThis as unknown as PageGlobals).cyborgLatency.reset());
      const t0 = Date.now();
      const committed = await drive(conductor, ids, rate, seconds);
      const actual = committed / ((Date.now() - t0) / 1000);
      // Everything committed must reach the page; wait for it (bounded), then read the samples.
      const deadline = Date.now() + 30_000;
      let samples: number[] = [];
      while (Date.now() < deadline) {
        samples = await page.evaluate(() => (globalThis as unknown as PageGlobals).cyborgLatency.take());
        if (samples.length >= committed) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return { committed, rate: actual, samples: samples.sort((a, b) => a - b) };
    };

    await measure(BASE_RATE, 3); // warm-up: the page's first renders, ELK's first layout, JIT
    const base = await measure(BASE_RATE, BASE_SECONDS);
    const load = await measure(RATE, SECONDS);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/bench-ui.png' });
    const line = (name: string, r: typeof base): string =>
      `${name.padEnd(10)} ${r.rate.toFixed(0).padStart(4)} transitions/s  ${String(r.samples.length).padStart(5)}/${r.committed} seen   p50 ${pct(r.samples, 50).toFixed(0).padStart(4)} ms   p99 ${pct(r.samples, 99).toFixed(0).padStart(4)} ms   max ${pct(r.samples, 100).toFixed(0)} ms`;
    const p50 = pct(load.samples, 50);
    const p99 = pct(load.samples, 99);
    process.stdout.write(
      [
        `bench:ui — commit → on screen, in Chromium, ${total.toLocaleString('en-US')} accelerators on ${HOSTS} hosts (page loaded and live in ${loadMs} ms)`,
        line('baseline', base),
        line('load', load),
        `ratio load/baseline: p50 ×${(p50 / pct(base.samples, 50)).toFixed(2)}, p99 ×${(p99 / pct(base.samples, 99)).toFixed(2)}`,
        `vs the 1 s "live" bound: p50 ${(p50 / 1000).toFixed(3)}×, p99 ${(p99 / 1000).toFixed(3)}×`,
        '',
      ].join('\n'),
    );
  } finally {
    await browser.close();
    await app.close();
    for (const a of agents) await a.stop();
    await conductor.stop();
    await bus.close();
  }
}

await main();
