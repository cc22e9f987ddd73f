import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { freshDatabase, query } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { requestIdOf } from './stack.js';

interface Conductor {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** `cyborg all-in-one` in a child process on `databaseUrl`; resolves once its API answers. */
async function startConductor(databaseUrl: string): Promise<Conductor> {
  // Placement is not what this story tests: without it no Placement call stands between a request and its commit.
  const { PLACEMENT_URL: _placement, ...inherited } = process.env;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'cli/main.ts', 'all-in-one', '--port', '0', '--host', 'crash-1', '--fake-gpus', '0', '--fake-nics', '2'],
    {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...inherited, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', LOG_PRETTY: '0', CYBORG_FAKE_VFS_PER_NIC: '20', CYBORG_FAKE_OP_DELAY_MS: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  child.stderr!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /API:\s+(http:\/\/[^/\s]+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`conductor exited (${code}) before it was up:\n${out}`)));
  });
  return { child, url, exited };
}

async function json<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as T };
}

interface View {
  id: string;
  state: string;
  allowed: string[];
}

describe.skipIf(!svc.postgres)('persistence: a conductor killed with SIGKILL under load loses nothing it acknowledged (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let c: Conductor | undefined;

  beforeAll(async () => {
    db = await freshDatabase('crash');
  });
  afterAll(async () => {
    c?.child.kill('SIGKILL');
    await c?.exited;
    await db?.drop();
  });

  it('after a restart every acknowledged transition is in the database and in the rebuilt actors', async () => {
    c = await startConductor(db.url);
    const first = c;
    const list = async (base: string): Promise<View[]> => (await json<{ accelerators: View[] }>(`${base}/cyborg/v1/accelerators`)).body.accelerators;
    await eventually(async () => (await list(first.url)).length >= 41, { what: 'the inventory to be registered' });
    const ids = (await list(first.url)).map((a) => a.id);

    const acked: { id: string; requestId: string; state: string }[] = [];
    let killed = false;
    let seq = 0;
    const worker = async (id: string): Promise<void> => {
      let allowed = (await json<View>(`${first.url}/cyborg/v1/accelerators/${id}`)).body.allowed;
      while (!killed) {
        const action = allowed.includes('ENABLE') ? 'enable' : allowed.includes('DISABLE') ? 'disable' : allowed.includes('RETRY') ? 'retry' : null;
        if (!action) return;
        const requestId = requestIdOf(`crash-${seq++}`);
        try {
          const r = await json<View>(`${first.url}/cyborg/v1/accelerators/${id}/${action}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-openstack-request-id': requestId },
            body: '{}',
          });
          if (r.status !== 200) return;
          acked.push({ id, requestId, state: r.body.state });
          allowed = r.body.allowed;
        } catch {
          return; // the conductor died mid-request: that one was never acknowledged
        }
      }
    };
    const workers = ids.map(worker);
    await eventually(() => acked.length >= 150, { what: '150 acknowledged transitions' });
    first.child.kill('SIGKILL');
    killed = true;
    await first.exited;
    await Promise.all(workers);
    const snapshot = [...acked];

    // Every acknowledged transition is in the log, under its request id, with the state answered.
    const rows = await query<{ request_id: string; to: string }>(db.url, 'select request_id, "to" from transition_log where request_id = any($1)', [
      snapshot.map((a) => a.requestId),
    ]);
    const logged = new Set(rows.map((r) => `${r.request_id}/${r.to}`));
    expect(snapshot.filter((a) => !logged.has(`${a.requestId}/${a.state}`))).toEqual([]);

    // The restarted conductor rebuilds every actor from the database: each one stands where its
    // log ends (an operation cut short by the kill ends in error "interrupted").
    c = await startConductor(db.url);
    const second = c;
    await eventually(
      async () => {
        const views = await list(second.url);
        const last = await query<{ id: string; to: string }>(
          db.url,
          'select distinct on (id) id, "to" from transition_log where kind = \'accelerator\' order by id, seq desc',
        );
        const expected = new Map(last.map((r) => [r.id, r.to]));
        return views.length === ids.length && views.every((v) => expected.get(v.id) === v.state && !['installing', 'uninstalling'].includes(v.state));
      },
      { what: 'the rebuilt actors to match the log' },
    );
    for (const a of snapshot) {
      const history = (await json<{ transitions: { requestId?: string; to: string }[] }>(`${second.url}/cyborg/v1/history/${a.id}?limit=1000`)).body
        .transitions;
      expect(
        history.some((h) => h.requestId === a.requestId && h.to === a.state),
        a.requestId,
      ).toBe(true);
    }
  });
});
