/**
 * Issue 42: the container's HEALTHCHECK probed 6666, 9180 and 9181, not the all-in-one's 6680, so
 * an all-in-one container was never healthy. Now it probes 6680 too, and the port the role was
 * given (CYBORG_PORT, CYBORG_METRICS_PORT) first.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliTarget } from '../cli/harness.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../deploy/container/healthcheck.mjs', import.meta.url));

async function healthcheck(env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, [SCRIPT], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 });
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout };
  }
}

describe("the container's HEALTHCHECK finds the all-in-one", () => {
  let target: Awaited<ReturnType<typeof startCliTarget>>;
  beforeAll(async () => {
    target = await startCliTarget('health-host');
  });
  afterAll(async () => {
    await target?.running.stop();
  });

  it("asks the role's own port first, and the all-in-one's 6680 among the defaults", async () => {
    const port = new URL(target.url).port;
    expect(await healthcheck({ CYBORG_PORT: port })).toEqual({ code: 0, stdout: `http://127.0.0.1:${port}/readyz: 200\n` });
    const closed = await healthcheck({ CYBORG_HEALTH_URL: 'http://127.0.0.1:1/readyz' });
    expect(closed).toEqual({ code: 1, stdout: 'nothing answers at http://127.0.0.1:1/readyz\n' });
    expect(readFileSync(SCRIPT, 'utf8')).toMatch(/6680, 6666, 9180, 9181/);
  });
});
