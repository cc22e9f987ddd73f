/**
 * The rolling-upgrade story's parts (docs/upgrade.md): the previous release checked out from git,
 * role processes of either release on one NATS and PostgreSQL, and Nova's load through the api
 * role — create → bind → poll → delete, as `bench:api storm` does — with an operator disabling and
 * enabling accelerators beside it. Each Nova step that answers 503 with Retry-After (a lease
 * takeover) or finds the api role away (it is being replaced) is retried, as Nova's client does;
 * any other failure (404, 409, 500) is a failed boot.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcceleratorStates } from '../../machines/index.js';
import { Deployment } from '../nats/deployment.js';
import { cyborgCommand, RoleProcess } from '../nats/helpers.js';
import { freePort } from '../support/ports.js';

export const ROOT = join(import.meta.dirname, '..', '..');
/** The previous release: no tag before 0.2.0, so the commit 0.2.0 was cut from (CHANGELOG.md). */
export const PREVIOUS = process.env.CYBORG_PREVIOUS_RELEASE ?? 'ded6a41';

/** Whether this checkout holds the previous release's commit (a shallow CI clone may not). */
export const previousAvailable = spawnSync('git', ['cat-file', '-e', `${PREVIOUS}^{commit}`], { cwd: ROOT }).status === 0;
/**
 * The story is part of the suite wherever NATS and PostgreSQL are (about 1.5 minutes an order on
 * this 2-core machine, both orders beside each other and a busy core); `CYBORG_UPGRADE_STORY=0`
 * leaves it out of a local run.
 */
export const storyAsked = process.env.CYBORG_UPGRADE_STORY !== '0';

// A shallow clone lacks the previous release: the story is skipped, and says why.
if (storyAsked && !previousAvailable)
  process.stderr.write(
    `the rolling-upgrade story is skipped: it needs the previous release's commit ${PREVIOUS} (a shallow clone lacks it; fetch it, or set CYBORG_PREVIOUS_RELEASE)\n`,
  );

/**
 * The previous release's tree under a temporary folder (`git archive`: no worktree left in the
 * repository's metadata), with this checkout's node_modules linked in when both lockfiles name
 * the same packages (only the root's version differs), else installed with `npm ci`.
 */
export function checkoutPrevious(): { root: string; remove: () => void } {
  const root = join(tmpdir(), `cyborg-previous-${randomUUID().slice(0, 8)}`);
  mkdirSync(root);
  execFileSync('sh', ['-c', `git archive ${PREVIOUS} | tar -x -C ${root}`], { cwd: ROOT });
  const packages = (text: string): string => {
    const lock = JSON.parse(text) as { packages: Record<string, unknown> };
    delete lock.packages[''];
    return JSON.stringify(lock.packages);
  };
  if (packages(readFileSync(join(root, 'package-lock.json'), 'utf8')) === packages(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')))
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  else execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'ignore' });
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

export type Release = 'previous' | 'current';
export interface Role {
  kind: 'conductor' | 'api' | 'agent';
  name: string;
  release: Release;
  proc: RoleProcess;
  /** Its /readyz (the api's own port; the health listener of the others). */
  readyz: string;
  url?: string;
}

/**
 * A host's liveness as a production conductor judges it (the defaults: stale after 15 s without a
 * heartbeat, lost 60 s later), not the test deployment's 2.5 s and 5 s: an agent replaced on a
 * loaded machine takes 9–11 s to come back, and with the test's windows its host was declared
 * lost, its cards `offline`, and Nova's binds to it refused, which no rolling upgrade does.
 */
const LIVENESS = { CYBORG_STALE_AFTER_MS: '15000', CYBORG_LOST_AFTER_MS: '60000' };

/** Starts and stops role processes of either release in one deployment. */
export class Fleet {
  readonly roles = new Map<string, Role>();
  constructor(
    readonly dep: Deployment,
    readonly previousRoot: string,
  ) {}

  private root(r: Release): string {
    return r === 'previous' ? this.previousRoot : ROOT;
  }

  async start(kind: Role['kind'], name: string, release: Release, extra: Record<string, string> = {}): Promise<Role> {
    const port = kind === 'api' ? await freePort() : 0;
    const args =
      kind === 'conductor'
        ? ['conductor', '--conductor-id', name]
        : kind === 'agent'
          ? ['agent', '--host', name, '--data-dir', join(this.dep.dir, name)]
          : ['api', '--port', String(port), '--listen', '127.0.0.1'];
    const proc = RoleProcess.spawn(`${kind} ${name} (${release})`, args, this.dep.env({ ...LIVENESS, ...extra }), this.root(release));
    this.dep.procs.push(proc);
    const up = kind === 'conductor' ? 'conductor role up' : kind === 'agent' ? 'agent registered and reported its inventory' : 'api role up';
    await proc.waitLog((l) => l.msg === up, up, 120_000);
    let readyz = `http://127.0.0.1:${port}/readyz`;
    if (kind !== 'api') {
      const l = await proc.waitLog((x) => x.msg.startsWith('health and metrics listener up'), 'health listener', 30_000);
      readyz = `http://127.0.0.1:${l.port as number}/readyz`;
    }
    const role: Role = { kind, name, release, proc, readyz, ...(kind === 'api' ? { url: `http://127.0.0.1:${port}` } : {}) };
    this.roles.set(name, role);
    return role;
  }

  /** Stops a role as an operator's systemctl stop does (SIGTERM: leases given back), then starts its replacement. */
  async replace(name: string, release: Release, extra: Record<string, string> = {}): Promise<Role> {
    const old = this.roles.get(name)!;
    await old.proc.kill('SIGTERM');
    return this.start(old.kind, name, release, extra);
  }

  get api(): Role {
    return [...this.roles.values()].find((r) => r.kind === 'api')!;
  }
}

/** `cyborg <args>` of this release, run as an operator would; exit code and output. */
export function cyborg(dep: Deployment, args: string[], extra: Record<string, string> = {}): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(...cyborgCommand(args), { cwd: ROOT, env: { ...process.env, ...dep.env(extra), LOG_LEVEL: 'warn' }, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The same of the previous release (its own `db migrate`, a downgrade's start). */
export function previousCyborg(root: string, dep: Deployment, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(...cyborgCommand(args), {
    cwd: root,
    env: { ...process.env, ...dep.env(), LOG_LEVEL: 'warn', LOG_PRETTY: 'false' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What Nova saw: boots done, acknowledged writes, and every answer it had to retry. */
export interface LoadReport {
  boots: number;
  /** 503s with Retry-After, retried (a lease takeover). */
  retried503: number;
  /** Calls that found no api listening (it was being replaced), retried. */
  apiAway: number;
  /** Writes sent whose answer never came (a connection cut, the client's 30 s wait): read back before sending again. */
  readBack: number;
  /** Failed boots: any answer but a retried 503 or a missing api (a 404, 409, 500, a bind that failed). */
  failures: string[];
  /** The operator's enables and disables that failed, by step. */
  operatorFailures: { step: string; api: Release; status: number; text: string; /** Answered after a 503 was retried. */ after503?: true }[];
  /** 503s without Retry-After (an api process closing), retried, by step and call. */
  bare503: { step: string; api: Release; text: string }[];
  /** Operator writes refused 409 on a state the look before had not shown yet, the view agreeing within 2 s. */
  staleReads: { step: string; api: Release; text: string }[];
  /** Accelerators the operator found in error (left alone: the story retries them as an operator would), by step. */
  metError: { step: string; id: string; why: string }[];
  created: Set<string>;
  deleted: Set<string>;
  deleteSent: Set<string>;
  toggles: number;
  /** ARQs found holding a handle a bind wanted, and what their history says. */
  holders: Map<string, string>;
  /** The ARQ each instance booted with. */
  arqOf: Map<string, string>;
}

/**
 * Nova's load through the api role, one worker per GPU slot, and an operator toggling each
 * host's other accelerators; runs until stop(). `apiUrl` is read at each call: the api role moves.
 */
export function novaLoad(
  apiUrl: () => string,
  /** Which release's api process answers now. */
  apiRelease: () => Release,
  slots: { host: string; rpUuid: string }[],
  toggled: string[],
  profile: string,
  stepNow: () => string = () => '',
) {
  const rep: LoadReport = {
    boots: 0,
    retried503: 0,
    apiAway: 0,
    readBack: 0,
    failures: [],
    operatorFailures: [],
    bare503: [],
    metError: [],
    staleReads: [],
    created: new Set(),
    deleted: new Set(),
    deleteSent: new Set(),
    toggles: 0,
    holders: new Map(),
    arqOf: new Map(),
  };
  let stopped = false;
  /**
   * One call, retried while the answer is a 503 with Retry-After or no api listens; any other
   * answer is returned. A write whose answer never came (sent, then the connection cut or the
   * client's wait over) may have been made: it is not sent again blindly but answered `status: 0`,
   * for the caller to read back, as the api's own 504 asks.
   */
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown>; after503?: true }> => {
    let after503: true | undefined;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${apiUrl()}${path}`, {
          method,
          headers: body === undefined ? { 'x-auth-token': NOVA['x-auth-token'] } : NOVA,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (err) {
        const refused = (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
        if (!refused && method !== 'GET' && method !== 'DELETE') {
          rep.readBack++;
          return { status: 0, json: { error: String(err) } };
        }
        rep.apiAway++;
        if (attempt > 600) throw new Error(`${method} ${path}: no api for a minute`);
        await sleep(100);
        continue;
      }
      const text = await res.text();
      // "Outcome unknown: read it back" (the api's 504): a read or a delete is asked again; a
      // create or a bind is handed back unanswered, for the caller to read back.
      if (res.status === 504) {
        if (method === 'GET' || method === 'DELETE') {
          await sleep(200);
          continue;
        }
        rep.readBack++;
        return { status: 0, json: JSON.parse(text) as Record<string, unknown> };
      }
      if (res.status === 503) {
        // With Retry-After: not done, try again (a lease takeover). Without: an api process that is
        // closing answered instead of routing the request (0.1.0's did). Both retried, as Nova's
        // client does with `[cyborg] status_code_retries`; counted apart.
        if (res.headers.get('retry-after')) rep.retried503++;
        else rep.bare503.push({ step: stepNow(), api: apiRelease(), text: `${method} ${path.split('?')[0]}` });
        after503 = true;
        await sleep(200);
        continue;
      }
      return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, ...(after503 ? { after503 } : {}) };
    }
  };
  const boot = async (slot: { host: string; rpUuid: string }, instance: string): Promise<void> => {
    let created = await call('POST', '/v2/accelerator_requests', { device_profile_name: profile });
    // No answer: an ARQ may have been made, unbound (Nova's retry of a build makes a new one too).
    for (let i = 0; created.status === 0 && i < 5; i++) created = await call('POST', '/v2/accelerator_requests', { device_profile_name: profile });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.json)}`);
    const uuid = (created.json.arqs as { uuid: string }[])[0]!.uuid;
    rep.created.add(uuid);
    rep.arqOf.set(instance, uuid);
    const bind = (): ReturnType<typeof call> =>
      call('PATCH', '/v2/accelerator_requests', {
        [uuid]: [
          { op: 'add', path: '/hostname', value: slot.host },
          { op: 'add', path: '/device_rp_uuid', value: slot.rpUuid },
          { op: 'add', path: '/instance_uuid', value: instance },
        ],
      });
    let bound = await bind();
    // No answer: read the ARQ back; the bind was made if it names this instance, else send it again.
    for (let i = 0; bound.status === 0 && i < 5; i++) {
      const back = await call('GET', `/v2/accelerator_requests/${uuid}`);
      bound = back.status === 200 && back.json.instance_uuid === instance ? { status: 202, json: back.json } : await bind();
    }
    if (bound.status !== 202) throw new Error(`bind: ${bound.status} ${JSON.stringify(bound.json)}`);
    for (let i = 0; ; i++) {
      const r = await call('GET', `/v2/accelerator_requests?instance=${instance}&bind_state=resolved`);
      if (r.status === 200) {
        const arq = (r.json.arqs as { state: string; attach_handle_uuid: string | null }[])[0];
        if (!arq?.attach_handle_uuid) {
          // What the ARQ's history says went wrong, for the failure's words.
          const h = await call('GET', `/cyborg/v1/history/${uuid}`);
          const last = ((h.json.transitions as Record<string, unknown>[] | undefined) ?? []).at(-1) ?? {};
          const { requestId: _r, actor: _a, projectId: _p, kind: _k, id: _i, ...said } = last;
          // A handle still held: by whom, and what happened to that ARQ (said once per holder).
          const holderInstance = /held \(([0-9a-f-]{36})/.exec(String(said.reason ?? ''))?.[1];
          const holder = holderInstance ? (rep.arqOf.get(holderInstance) ?? holderInstance) : undefined;
          if (holder && !rep.holders.has(holder)) {
            rep.holders.set(holder, 'asking');
            const hh = await call('GET', `/cyborg/v1/history/${holder}`);
            const ts = ((hh.json.transitions as Record<string, unknown>[] | undefined) ?? []).map(
              (t) => `${String(t.at)} ${String(t.event)}: ${String(t.from)} → ${String(t.to)}`,
            );
            rep.holders.set(
              holder,
              `${rep.created.has(holder) ? 'created' : 'not created'} by the load, ${rep.deleted.has(holder) ? 'deleted (204)' : rep.deleteSent.has(holder) ? 'delete sent' : 'not deleted'}; ${ts.join('; ')}`,
            );
          }
          throw new Error(`resolved as ${arq?.state} without an attach handle: ${JSON.stringify(said).slice(0, 600)}`);
        }
        break;
      }
      if (r.status !== 423) throw new Error(`resolved query: ${r.status} ${JSON.stringify(r.json)}`);
      if (i > 3000) throw new Error('not resolved within a minute');
      await sleep(20);
    }
    rep.deleteSent.add(uuid);
    const deleted = await call('DELETE', `/v2/accelerator_requests?instance=${instance}`);
    if (deleted.status !== 204) throw new Error(`delete: ${deleted.status} ${JSON.stringify(deleted.json)}`);
    rep.deleted.add(uuid);
    rep.boots++;
  };
  const worker = async (slot: { host: string; rpUuid: string }): Promise<void> => {
    while (!stopped) {
      const instance = randomUUID();
      await boot(slot, instance).catch(async (err: Error) => {
        rep.failures.push(`[${stepNow()}] ${slot.host}: ${err.message}`);
        // What Nova does with a failed build: the instance's ARQs are deleted.
        const arq = rep.arqOf.get(instance);
        if (arq) rep.deleteSent.add(arq);
        await call('DELETE', `/v2/accelerator_requests?instance=${instance}`).catch(() => undefined);
      });
    }
  };
  // The operator: disable then enable each accelerator Nova is not booting on, over and over.
  const operator = async (): Promise<void> => {
    while (!stopped) {
      for (const id of toggled) {
        for (let i = 0; i < 2; i++) {
          if (stopped) return;
          // As an operator does: look first, then disable what is enabled and enable what is not
          // (a toggle that failed is not followed by one that cannot apply).
          const now = await call('GET', `/cyborg/v1/accelerators/${id}`);
          if (now.status !== 200) {
            rep.operatorFailures.push({
              step: stepNow(),
              api: apiRelease(),
              status: now.status,
              text: `operator show ${id}: ${now.status} ${JSON.stringify(now.json).slice(0, 300)}`,
            });
            continue;
          }
          // A card in error is not toggled (neither applies: only a retry or a removal does).
          if (now.json.state === AcceleratorStates.error) {
            const e = now.json.error as { op?: string; reason?: string } | null;
            rep.metError.push({ step: stepNow(), id, why: `${e?.op} failed: ${e?.reason}` });
            continue;
          }
          // Busy (an operation of its own whose answer never came) or away: wait until it settles.
          if (now.json.state !== AcceleratorStates.ready && now.json.state !== AcceleratorStates.inactive) {
            await sleep(200);
            continue;
          }
          const action = now.json.state === AcceleratorStates.ready ? 'disable' : 'enable';
          const r = await call('POST', `/cyborg/v1/accelerators/${id}/${action}`);
          // No answer: the next look says where it stands.
          if (r.status === 0) continue;
          // Refused on the card's true state while the look said otherwise: a read a moment
          // behind (the api's view is replaced as hosts move between conductors). Counted apart
          // when the view comes to agree within 2 s — 10 s for the previous release's api, whose
          // view waits for the new holder's whole host (CI met one past 2 s during the first
          // conductor's roll); a view that goes on disagreeing is a failure.
          if (r.status === 409 && r.json.code === 'accelerator.transition_invalid' && r.json.state !== now.json.state && !r.after503) {
            if (await settles(id, String(r.json.state), apiRelease() === 'previous' ? 50 : 10)) {
              rep.staleReads.push({
                step: stepNow(),
                api: apiRelease(),
                text: `${action} ${id}: shown ${String(now.json.state)}, refused as ${String(r.json.state)}`,
              });
              continue;
            }
          }
          if (r.status === 202) {
            // Accepted, still under way (its agent is restarting): the operator waits for it to end.
            if (await settles(id, action === 'disable' ? AcceleratorStates.inactive : AcceleratorStates.ready)) rep.toggles++;
            else rep.operatorFailures.push({ step: stepNow(), api: apiRelease(), status: 202, text: `operator ${action} ${id}: under way for a minute` });
          } else if (r.status !== 200)
            rep.operatorFailures.push({
              step: stepNow(),
              api: apiRelease(),
              status: r.status,
              ...(r.after503 ? { after503: r.after503 } : {}),
              text: `operator ${action} ${id}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`,
            });
          else rep.toggles++;
        }
      }
      await sleep(1_000); // under the api's 300 operator writes a minute
    }
  };
  /** Whether an accelerator reaches `target` within a minute (or `tries` looks 200 ms apart), as `cyborg accelerator show` would tell. */
  const settles = async (id: string, target: string, tries = 300): Promise<boolean> => {
    for (let i = 0; i < tries; i++) {
      const r = await call('GET', `/cyborg/v1/accelerators/${id}`);
      if (r.status === 200 && r.json.state === target) return true;
      await sleep(200);
    }
    return false;
  };
  const all = Promise.all([...slots.map(worker), operator()]);
  return {
    report: rep,
    stop: async (): Promise<LoadReport> => {
      stopped = true;
      await all;
      return rep;
    },
  };
}

/** Every live role's /readyz: status and body. */
export async function readiness(fleet: Fleet): Promise<{ name: string; release: Release; status: number; body: Record<string, unknown> }[]> {
  return Promise.all(
    [...fleet.roles.values()].map(async (r) => {
      const res = await fetch(r.readyz).catch(() => null);
      return { name: r.name, release: r.release, status: res?.status ?? 0, body: res ? ((await res.json().catch(() => ({}))) as Record<string, unknown>) : {} };
    }),
  );
}
