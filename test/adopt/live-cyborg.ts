import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PYTHON } from './cut-over.js';

/**
 * OpenStack Cyborg's own services, run unmodified from the checkout named by CYBORG_SOURCE on
 * Debian 12's python3-oslo.* packages (../shared/reference/running-cyborg-9.md): cyborg-dbsync,
 * cyborg-api, cyborg-conductor and cyborg-agent with the fake driver, against MariaDB, RabbitMQ
 * and the real Placement. Nothing of Cyborg's is copied or built here: the checkout is put on
 * PYTHONPATH, and its entry points (how cyborg-agent finds its drivers) are written by setuptools'
 * egg_info into a scratch folder, never into the checkout.
 */
export const SOURCE = process.env.CYBORG_SOURCE;

/** Where RabbitMQ listens (RABBITMQ_URL or these machines' guest account). */
export const RABBIT = process.env.RABBITMQ_URL ?? 'rabbit://guest:guest@127.0.0.1:5672/';

/** Whether something listens on the RabbitMQ URL's port. */
export async function rabbitUp(): Promise<boolean> {
  const u = new URL(RABBIT.replace(/^rabbit:/, 'http:'));
  return new Promise((ok) => {
    const s = connect({ host: u.hostname, port: Number(u.port || 5672), timeout: 2_000 });
    s.once('connect', () => (s.destroy(), ok(true)));
    s.once('error', () => ok(false));
    s.once('timeout', () => (s.destroy(), ok(false)));
  });
}

/** Why the live story cannot run here, or undefined when it can. */
export function whyNoCyborg(): string | undefined {
  if (!SOURCE) return 'CYBORG_SOURCE is not set: point it at a checkout of openstack/cyborg (tag 9.0.0) to run the live story';
  const r = spawnSync(PYTHON, ['-c', 'import cyborg.cmd.api, cyborg.cmd.conductor, cyborg.cmd.agent'], {
    env: { ...process.env, PYTHONPATH: SOURCE, PBR_VERSION: '9.0.0' },
    encoding: 'utf8',
  });
  if (r.status !== 0)
    return `Cyborg at ${SOURCE} does not import with ${PYTHON} (docs/testing.md names the Debian packages): ${r.stderr.trim().split('\n').at(-1)}`;
  return undefined;
}

export interface CyborgSettings {
  host: string;
  database: string;
  /** oslo.messaging's exchange: the story's own, on RabbitMQ's shared vhost. */
  exchange: string;
  apiPort: number;
  placementUrl: string;
  /** keystoneauth's password options for Placement and Nova (the `cyborg` service user); none: Placement's noauth2 `admin` token. */
  keystone?: { authUrl: string; username: string; password: string; project: string };
  novaUrl: string;
}

/** keystoneauth's options for a service Cyborg calls (Placement; Nova's external events). */
function ksa(group: string, k: CyborgSettings['keystone'], endpoint: string): string {
  const auth = k
    ? `auth_type = password\nauth_url = ${k.authUrl}\nusername = ${k.username}\npassword = ${k.password}\nproject_name = ${k.project}\nuser_domain_name = Default\nproject_domain_name = Default`
    : `auth_type = admin_token\ntoken = admin\nendpoint = ${endpoint}`;
  return `[${group}]\n${auth}\nendpoint_override = ${endpoint}\n`;
}

/**
 * cyborg.conf for the story, and an api-paste.ini without authtoken: Zed has no noauth strategy,
 * so the callers send keystonemiddleware's X-Roles / X-User-Id / X-Project-Id themselves.
 */
function writeConfig(dir: string, s: CyborgSettings): string {
  writeFileSync(
    join(dir, 'api-paste.ini'),
    `[pipeline:main]\npipeline = request_id api_v2\n[app:api_v2]\npaste.app_factory = cyborg.api.app:app_factory\n[filter:request_id]\npaste.filter_factory = oslo_middleware:RequestId.factory\n`,
  );
  const conf = join(dir, 'cyborg.conf');
  writeFileSync(
    conf,
    `[DEFAULT]
host = ${s.host}
transport_url = ${RABBIT}
control_exchange = ${s.exchange}
[database]
connection = mysql+pymysql://root@127.0.0.1:3306/${s.database}
[api]
host_ip = 127.0.0.1
port = ${s.apiPort}
api_workers = 1
api_paste_config = ${join(dir, 'api-paste.ini')}
[agent]
enabled_drivers = fake_driver
[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
${ksa('placement', s.keystone, s.placementUrl)}${ksa('nova', s.keystone, s.novaUrl)}`,
  );
  return conf;
}

export interface LiveCyborg {
  dir: string;
  /** cyborg-api's root: http://127.0.0.1:<port>. */
  apiUrl: string;
  /** `cyborg-dbsync upgrade`: Cyborg's alembic migrations on the (empty) database. */
  dbsync(): Promise<void>;
  /** Starts cyborg-<role> (`api`, `conductor`, `agent`); its log is `<dir>/<role>.log`. */
  start(role: 'api' | 'conductor' | 'agent'): void;
  /** What cyborg-<role> has logged so far. */
  log(role: 'api' | 'conductor' | 'agent'): string;
  /** SIGTERM to each service's process group, then waits for each to end (SIGKILL after 15 s). */
  stop(): Promise<void>;
  /** The last lines of each service's log, for a failure's message. */
  logs(): string;
  remove(): void;
}

export function liveCyborg(s: CyborgSettings): LiveCyborg {
  const dir = mkdtempSync(join(tmpdir(), 'cyborg-live-'));
  const conf = writeConfig(dir, s);
  const egg = join(dir, 'egg');
  const env = { ...process.env, PYTHONPATH: `${SOURCE}:${egg}`, PBR_VERSION: '9.0.0' };
  const running = new Map<string, ChildProcess>();
  const py = (role: string): string[] => [
    '-c',
    `import sys; sys.argv=['cyborg-${role}', '--config-file', '${conf}'${role === 'dbsync' ? ", 'upgrade'" : ''}]; from cyborg.cmd.${role} import main; main()`,
  ];
  return {
    dir,
    apiUrl: `http://127.0.0.1:${s.apiPort}`,
    dbsync: async () => {
      const run = promisify(execFile);
      mkdirSync(egg, { recursive: true });
      await run(PYTHON, ['setup.py', '-q', 'egg_info', '--egg-base', egg], { cwd: SOURCE, env });
      await run(PYTHON, py('dbsync'), { env, timeout: 120_000 });
    },
    start: (role) => {
      // oslo.log writes to stderr without [DEFAULT] log_file. Its own process group: the api's workers go with it.
      const log = openSync(join(dir, `${role}.log`), 'w');
      const child = spawn(PYTHON, py(role), { env, detached: true, stdio: ['ignore', log, log] });
      closeSync(log);
      running.set(role, child);
    },
    stop: async () => {
      await Promise.all(
        [...running.values()].map(async (c) => {
          if (c.exitCode !== null || c.pid === undefined) return;
          const gone = new Promise<void>((r) => c.once('exit', () => r()));
          process.kill(-c.pid, 'SIGTERM');
          const t = setTimeout(() => c.exitCode === null && process.kill(-c.pid!, 'SIGKILL'), 15_000);
          await gone;
          clearTimeout(t);
        }),
      );
      running.clear();
    },
    log: (role) => {
      try {
        return readFileSync(join(dir, `${role}.log`), 'utf8');
      } catch {
        return '';
      }
    },
    logs: () =>
      ['api', 'conductor', 'agent']
        .map((r) => {
          try {
            return `== cyborg-${r}\n${readFileSync(join(dir, `${r}.log`), 'utf8')
              .split('\n')
              .slice(-15)
              .join('\n')}`;
          } catch {
            return '';
          }
        })
        .join('\n'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Nova as Cyborg's bind sees it: the version document and `POST /os-server-external-events`
 * answered 200 for every event (Cyborg calls it inside the bind's PATCH). Counts the events.
 */
export async function novaEvents(port: number): Promise<{ url: string; events: Record<string, unknown>[]; close(): Promise<void> }> {
  const events: Record<string, unknown>[] = [];
  const url = `http://127.0.0.1:${port}/v2.1`;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (b: Buffer) => (body += b.toString()));
    req.on('end', () => {
      const v = { id: 'v2.1', status: 'CURRENT', version: '2.95', min_version: '2.1', links: [{ rel: 'self', href: `${url}/` }] };
      let out: unknown = req.url?.startsWith('/v2.1') ? { version: v } : { versions: [v] };
      if (req.method === 'POST') {
        const got = (JSON.parse(body || '{}') as { events?: Record<string, unknown>[] }).events ?? [];
        events.push(...got);
        out = { events: got.map((e) => ({ ...e, code: 200, status: 'completed' })) };
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url, events, close: () => new Promise((r) => server.close(() => r())) };
}
