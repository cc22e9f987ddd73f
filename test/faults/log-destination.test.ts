import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../actors/runtime/index.js';
import { createLogger, loadConfig } from '../../config/index.js';
import { startAllInOne, type Running } from '../../roles/all-in-one.js';

const ADMIN = { 'x-roles': 'admin', 'x-project-id': 'demo', 'x-user-id': 'ops' };

/** The all-in-one logging at debug into `file` (the root logger the program makes, 64 KiB of room). */
async function startLoggingTo(file: string, host: string): Promise<Running> {
  const config = loadConfig({ host, listen: { address: '127.0.0.1', port: 0 }, logLevel: 'debug', logPretty: false, api: { operatorRateLimit: 0 } }, {});
  return startAllInOne(config, createLogger(config, undefined, { file, maxBufferedBytes: 64 * 1024 }), { journal: new MemoryJournal() });
}

/** Enables and disables every accelerator `rounds` times over HTTP; every answer must be 200. */
async function churn(aio: Running, rounds: number): Promise<number> {
  const ids = aio.conductor.listAccelerators({}).map((a) => a.id);
  let answered = 0;
  for (let r = 0; r < rounds; r++)
    for (const verb of ['enable', 'disable'])
      for (const id of ids) {
        const res = await fetch(`${aio.url}/cyborg/v1/accelerators/${id}/${verb}`, { method: 'POST', headers: ADMIN });
        expect(res.status, `${verb} ${id}`).toBe(200);
        await res.arrayBuffer();
        answered++;
      }
  return answered;
}

async function dropped(aio: Running): Promise<number> {
  const text = await (await fetch(`${aio.url}/metrics`)).text();
  const m = /^cyborg_log_lines_dropped_total(?:\{[^}]*\})? (\d+)/m.exec(text);
  return m ? Number(m[1]) : -1;
}

/** What the FIFO holds now, read without blocking. */
function drain(fd: number): string {
  const buf = Buffer.alloc(1 << 20);
  let out = '';
  for (;;) {
    try {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) return out;
      out += buf.toString('utf8', 0, n);
    } catch {
      return out; // EAGAIN: empty for now
    }
  }
}

const SAID = 'the log destination did not take lines for a while';

/**
 * Bad input for the logger: a destination that does not take lines. Logging is asynchronous, so
 * a pipe nobody reads (the pipe fills, the write never returns) or a full disk (ENOSPC on every
 * write) costs memory up to a bound and then lines — counted in `cyborg_log_lines_dropped_total`
 * — never the service: every request is answered, every acknowledged change is there.
 */
describe('a log destination that blocks', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-log-'));
  const fifo = join(dir, 'log.fifo');
  let reader = -1;
  const running: Running[] = [];

  beforeAll(() => {
    execFileSync('mkfifo', [fifo]);
    // A reader that never reads: the writer's open succeeds, and its pipe fills after 64 KiB.
    reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  });
  afterAll(async () => {
    for (const aio of running) await aio.stop();
    if (reader >= 0) closeSync(reader);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['a pipe nobody reads', () => fifo, 'log-fifo'],
    ['a full disk (/dev/full)', () => '/dev/full', 'log-full'],
  ])('%s: the service keeps answering, lines it could not write are counted, nothing acknowledged is lost', async (_what, file, host) => {
    const aio = await startLoggingTo(file(), host);
    running.push(aio);
    // Rounds until the destination is past its bound (the pipe's 64 KiB, then the 64 KiB held).
    let answered = 0;
    for (let round = 0; round < 40 && (await dropped(aio)) <= 0; round++) answered += await churn(aio, 1);
    answered += await churn(aio, 1);
    expect(answered).toBeGreaterThan(0);
    // Every acknowledged change is there: the last round disabled every accelerator.
    for (const a of aio.conductor.listAccelerators({})) expect(a.state, a.name).toBe('inactive');
    const audit = (await (await fetch(`${aio.url}/cyborg/v1/audit?limit=1000`, { headers: ADMIN })).json()) as { audit: unknown[] };
    expect(audit.audit.length).toBeGreaterThanOrEqual(answered);
    expect(await dropped(aio)).toBeGreaterThan(0);
    const health = await fetch(`${aio.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it('once the pipe is read again, the drop is said once, in one line with the count', async () => {
    const aio = running[0]!;
    let read = '';
    await expect
      .poll(
        async () => {
          read += drain(reader);
          await churn(aio, 1);
          return read.includes(SAID);
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(true);
    await churn(aio, 1);
    read += drain(reader);
    const said = read.split('\n').filter((l) => l.includes(SAID));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!)).toMatchObject({ level: 40, dropped: expect.any(Number) });
  });
});
