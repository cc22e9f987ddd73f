import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';

/**
 * What a new user does after `npm start`: the real program in its own process, zero setup
 * (no DATABASE_URL, no NATS), listening on a free port; walk one accelerator with HTTP; stop it
 * with SIGTERM and expect a clean exit.
 */
describe('cyborg all-in-one, as a new user runs it', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cyborg-smoke-'));
  let child: ChildProcess | undefined;
  let output = '';

  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts, prints its URLs, walks an accelerator, refuses a forbidden step, and shuts down cleanly', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CYBORG_DATA_DIR: dataDir, LOG_PRETTY: 'false', LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    delete env.NATS_URL;
    delete env.PLACEMENT_URL;
    // Node itself (not npx) so that SIGTERM reaches the program and its exit code is ours.
    child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'all-in-one', '--port', '0', '--host', 'smoke-1'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const api = await eventually(() => /API:\s+(http:\/\/\S+)\/cyborg\/v1\/accelerators/.exec(output)?.[1], {
      what: `the URL line; output so far:\n${output}`,
      timeoutMs: 90_000,
    });
    expect(output).toMatch(/Visualizer: http:\/\/\S+\/ui/);

    const list = (await (await fetch(`${api}/cyborg/v1/accelerators?type=FPGA`)).json()) as { accelerators: { id: string; name: string; state: string }[] };
    const fpga = list.accelerators[0]!;
    expect(fpga).toMatchObject({ name: 'smoke-1_FakeDevice', state: 'inactive' });
    const post = async (action: string, body: unknown = {}) => {
      const res = await fetch(`${api}/cyborg/v1/accelerators/${fpga.id}/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { state: string; code?: string } };
    };
    expect((await post('enable')).body.state).toBe('ready');
    expect((await post('program', { bitstreamId: 'bs-1' })).body.state).toBe('programmed');
    expect((await post('attach', { instanceUuid: '2b0a3b4e-1c55-4f3a-9a2c-6b1f0c7d9e11' })).body.state).toBe('attached');
    const refused = await post('remove');
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('accelerator.transition_invalid');
    expect((await post('detach')).body.state).toBe('programmed');

    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toMatch(/cyborg_accelerators\{[^}]*state="programmed"[^}]*\} 1/);
    expect(metrics).toMatch(/cyborg_transitions_total\{[^}]*to="attached"[^}]*\} 1/);
    expect(metrics).toMatch(/cyborg_journal_flush_seconds_count\{[^}]*\} [1-9]/);
    expect((await fetch(`${api}/healthz`)).status).toBe(200);

    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    child = undefined;
  });
});
