import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { RemoteControlPlane } from '../../control/client.js';
import { AcceleratorStates } from '../../machines/index.js';
import { PROTOCOL, RELEASE } from '../../release/index.js';
import { freshDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { Deployment } from '../nats/deployment.js';
import { nothingAcknowledgedUndone } from '../faults/nova-load.js';
import { leakedAllocations } from '../support/view-equals-db.js';
import { checkoutPrevious, cyborg, Fleet, novaLoad, previousCyborg, readiness } from './roll.js';

const CONDUCTORS = ['roll-c1', 'roll-c2'];
const AGENTS = ['roll-h1', 'roll-h2', 'roll-h3'];
/** Short windows: a role moves up 3 s after the last older peer was heard. */
const WINDOW = { CYBORG_PROTOCOL_PEER_WINDOW_MS: '3000' };
const NOVA = { 'x-auth-token': 'admin', 'content-type': 'application/json' };

export interface Step {
  step: string;
  /** When it started (the roles' log lines carry the same clock). */
  at: string;
  ms: number;
  retried503: number;
  apiAway: number;
}

/**
 * The rolling upgrade from the previous release to this one, in `order`: conductors, api, agents
 * (docs/upgrade.md's order), or agents first while they are pinned to the older protocol, then
 * unpinned. Returns each step's time and the 503s Nova retried in it.
 */
export async function rollingUpgrade(order: 'conductors-first' | 'agents-first', svc: { nats: string; postgres: string }): Promise<Step[]> {
  const prev = checkoutPrevious();
  const db = await freshDatabase(`upgrade_${order.replace('-', '_')}`, { migrated: false });
  const dep = new Deployment(svc.nats, db.url);
  dep.logsOnFailure();
  const fleet = new Fleet(dep, prev.root);
  const steps: Step[] = [];
  let load: ReturnType<typeof novaLoad> | undefined;
  let current = 'start';
  const step = async (name: string, fn: () => Promise<unknown>): Promise<void> => {
    current = name;
    const at = new Date().toISOString().slice(11, 23);
    const t = performance.now();
    const before = { r: load?.report.retried503 ?? 0, a: load?.report.apiAway ?? 0 };
    await fn();
    // Every role honest after each role it replaced: the new one ready, the others still ready.
    if (/^(conductor|api|agent)/.test(name)) await honest(name);
    steps.push({
      step: name,
      at,
      ms: Math.round(performance.now() - t),
      retried503: (load?.report.retried503 ?? 0) - before.r,
      apiAway: (load?.report.apiAway ?? 0) - before.a,
    });
  };
  /** Every live role says ready, and the new ones say the release and protocol they run. */
  const honest = async (what: string): Promise<boolean> =>
    eventually(
      async () => {
        const r = await readiness(fleet);
        const bad = r.filter((x) => x.status !== 200 || (x.release === 'current' && x.body.release !== RELEASE));
        if (bad.length) throw new Error(`${what}: not ready: ${bad.map((b) => `${b.name} ${b.status} ${JSON.stringify(b.body).slice(0, 200)}`).join('; ')}`);
        return true;
      },
      { what, timeoutMs: 60_000 },
    );
  let view: RemoteControlPlane | undefined;
  try {
    await step('previous release up (db migrate, 2 conductors, 3 agents, api)', async () => {
      const migrated = previousCyborg(prev.root, dep, ['db', 'migrate']);
      expect(migrated.code, migrated.stderr).toBe(0);
      await Promise.all(CONDUCTORS.map((c) => fleet.start('conductor', c, 'previous')));
      await Promise.all([...AGENTS.map((h) => fleet.start('agent', h, 'previous')), fleet.start('api', 'roll-api', 'previous')]);
      view = await dep.api();
      await eventually(async () => AGENTS.every((h) => view!.listAccelerators({ host: h }).length === 2) && (await fetch(fleet.api.readyz)).status === 200, {
        what: 'every host reported through the previous release',
        timeoutMs: 60_000,
      });
      for (const a of AGENTS.flatMap((h) => view!.listAccelerators({ host: h }))) {
        const r = await fetch(`${fleet.api.url}/cyborg/v1/accelerators/${a.id}/enable`, { method: 'POST', headers: { 'x-auth-token': 'admin' } });
        expect(r.status).toBe(200);
      }
      const dp = await fetch(`${fleet.api.url}/v2/device_profiles`, {
        method: 'POST',
        headers: NOVA,
        body: JSON.stringify([{ name: 'roll-dp', groups: [{ 'resources:PGPU': '1' }] }]),
      });
      expect(dp.status).toBe(201);
    });
    const all = AGENTS.flatMap((h) => view!.listAccelerators({ host: h }));
    const gpus = all.filter((a) => a.deviceType === 'GPU').map((a) => ({ host: a.host, rpUuid: a.rpUuid }));
    load = novaLoad(
      () => fleet.api.url!,
      () => fleet.api.release,
      gpus,
      all.filter((a) => a.deviceType !== 'GPU').map((a) => a.id),
      'roll-dp',
      () => current,
    );
    await eventually(() => load!.report.boots >= 3, { what: 'Nova booting on the previous release', timeoutMs: 60_000 });

    await step('expand (cyborg db migrate) beside the previous release', async () => {
      const r = cyborg(dep, ['db', 'migrate']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Migration20261202010000_schema_releases');
      expect(r.stdout).not.toContain('contract');
    });
    const pin: Record<string, string> = order === 'agents-first' ? { CYBORG_UPGRADE_LEVELS_PROTOCOL: String(PROTOCOL.previous) } : {};
    const agents = async (extra: Record<string, string>, label: string): Promise<void> => {
      for (const h of AGENTS) await step(`${label} ${h}`, () => fleet.replace(h, 'current', { ...WINDOW, ...extra }));
    };
    if (order === 'agents-first') await agents(pin, 'agent, pinned to protocol 1:');
    for (const c of CONDUCTORS) {
      await step(`conductor ${c}`, () => fleet.replace(c, 'current', WINDOW));
      // The other conductor (an older one, the first time) still runs: contract must wait for it.
      if (c === CONDUCTORS[0]) {
        const refused = cyborg(dep, ['db', 'contract']);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr.trim().split('\n')).toHaveLength(1);
        expect(refused.stderr).toMatch(/db contract: refused while \d+ older role\(s\) run: .*0\.1\.0.*; upgrade them to 0\.2\.0 first/);
      }
    }
    // 0.1.0's conductors mishandle a host between two of them: a bind to it fails "host not found",
    // and a delete served as its holder stops leaves the handle held until the orphan sweep frees
    // it (fixed in 0.2.0: docs/upgrade.md). From here every conductor is this release's: what
    // they left held is swept before the roll goes on, and every failure after is this release's.
    // A 0.1.0 conductor stopped with a driver operation in flight (its agent restarting, say) left
    // the card in error "interrupted" (fixed in 0.2.0: a stopping conductor lets them end): the
    // operator retries each, as the error's way out says.
    await step("the handles the previous release's conductors left held, swept, and the cards they interrupted retried", async () => {
      await eventually(async () => (await leakedAllocations(db.url)).length === 0, { what: 'no handle held for a gone ARQ', timeoutMs: 60_000 });
      await retryInterrupted(
        fleet.api.url!,
        all.map((a) => a.id),
      );
    });
    const previousFaults = load.report.failures.length;
    const previousErrors = load.report.metError.length;
    await step('api', () => fleet.replace('roll-api', 'current', WINDOW));
    if (order === 'conductors-first') await agents({}, 'agent');
    else await agents({}, 'agent, unpinned:');
    // The same takeovers again, this release's conductors on both sides.
    for (const c of CONDUCTORS) await step(`conductor ${c} restarted again, this release on both sides`, () => fleet.replace(c, 'current', WINDOW));
    await honest('every role ready after the roll');

    await step('every role speaks the new protocol', () =>
      eventually(
        async () => {
          const r = await readiness(fleet);
          return r.every((x) => (x.body.protocol as { speaks?: number } | undefined)?.speaks === PROTOCOL.current);
        },
        { what: `every role speaking protocol ${PROTOCOL.current}`, timeoutMs: 30_000 },
      ),
    );
    await step('contract (cyborg db contract) once upgrade-check says it is safe', async () => {
      await eventually(() => /contract is safe now/.test(cyborg(dep, ['status', 'upgrade-check']).stdout), {
        what: 'upgrade-check: contract safe',
        timeoutMs: 30_000,
      });
      const r = cyborg(dep, ['db', 'contract']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Migration20261202010100_contract_old_history');
    });
    await honest('every role ready after contract');
    await step('downgrade: a previous-release conductor on the contracted schema', async () => {
      const r = previousCyborg(prev.root, dep, ['conductor', '--conductor-id', 'roll-old-again']);
      expect(r.code).not.toBe(0);
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/not at this code's schema/);
    });
    const report = await load.stop();
    load = undefined;
    steps.push({
      step: `Nova: ${report.boots} boots, ${report.toggles} operator enables/disables, ${report.readBack} writes read back after no answer`,
      at: new Date().toISOString().slice(11, 23),
      ms: 0,
      retried503: report.retried503,
      apiAway: report.apiAway,
    });
    writeFileSync(
      join(tmpdir(), `cyborg-upgrade-${order}.json`),
      JSON.stringify({ steps, failures: report.failures, operator: report.operatorFailures, bare503: report.bare503, holders: [...report.holders] }, null, 1),
    );
    for (const f of report.operatorFailures) process.stdout.write(`operator call failed [${f.step}, ${f.api} api]: ${f.text}\n`);
    for (const r of report.staleReads) process.stdout.write(`operator's look a moment behind [${r.step}, ${r.api} api]: ${r.text}\n`);
    for (const b of report.bare503) process.stdout.write(`503 without Retry-After, retried [${b.step}, ${b.api} api]: ${b.text}\n`);
    for (const [uuid, said] of report.holders) process.stdout.write(`handle held by ARQ ${uuid}: ${said}\n`);
    const theirs = report.failures.slice(0, previousFaults);
    process.stdout.write(`boots failed while the previous release's conductors served: ${theirs.length}\n${theirs.slice(0, 10).join('\n')}\n`);
    // Each one of the previous release's faults (docs/upgrade.md): a host between its conductors,
    // a handle its stop left held, a bind its stop cut, a card still busy with a detach it kept
    // re-sending to a restarting agent.
    const previousReleaseFault =
      /host roll-h\d not found|has no free attach handle|accelerator [0-9a-f-]{36} stopped|interrupted|Deployable not found with resource provider|an operation is under way on it \(detaching\)/;
    // While a previous-release conductor is being stopped (the first pass over the conductors),
    // whatever its stop cuts is its own: reported above, not failed. The same takeovers are made
    // again between this release's conductors below, where no failure is allowed.
    const whileOneStops = /^\[conductor roll-c\d\] /;
    expect(theirs.filter((f) => !previousReleaseFault.test(f) && !whileOneStops.test(f))).toEqual([]);
    expect(report.failures.slice(previousFaults)).toEqual([]);
    // The previous release's api may answer an operator 404 while a host moves between conductors
    // (its view is rebuilt without the host's accelerators until the new holder has them), a bare
    // 503 while it closes, and 503 for a write it stopped waiting for that then lands (retried as
    // Nova's client does, the write is refused 409: already made) — each fixed in this release
    // (docs/upgrade.md): this release's api none.
    expect(report.operatorFailures.filter((f) => f.api === 'current')).toEqual([]);
    expect(report.operatorFailures.filter((f) => f.status !== 404 && !(f.status === 409 && f.after503))).toEqual([]);
    expect(report.bare503.filter((b) => b.api === 'current')).toEqual([]);
    // This release's api: a look a moment behind the card (then agreeing) only while hosts move
    // between conductors.
    expect(report.staleReads.filter((r) => r.api === 'current' && !/^conductor /.test(r.step))).toEqual([]);
    // Cards in error: only those a previous-release conductor interrupted, and none after the retry.
    expect(report.metError.filter((e) => !/interrupted/.test(e.why))).toEqual([]);
    expect(report.metError.slice(previousErrors)).toEqual([]);
    expect(report.boots).toBeGreaterThan(10);
    await nothingAcknowledgedUndone(view!, db.url, report);

    return steps;
  } finally {
    await load?.stop();
    process.stdout.write(
      `rolling upgrade (${order}):\n${steps.map((s) => `  ${s.at} ${s.step}: ${s.ms} ms, ${s.retried503} × 503 retried, ${s.apiAway} × api away`).join('\n')}\n`,
    );
    await dep.stop();
    await db.drop();
    prev.remove();
  }
}

/**
 * Each accelerator in error retried through the api, as an operator follows the error's way out
 * (`cyborg accelerator retry`), until none is: every error must be an operation a stopping
 * previous-release conductor cut ("interrupted"), never one of this release's.
 */
async function retryInterrupted(apiUrl: string, ids: string[]): Promise<void> {
  const admin = { 'x-auth-token': 'admin' };
  await eventually(
    async () => {
      const inError: string[] = [];
      for (const id of ids) {
        const r = await fetch(`${apiUrl}/cyborg/v1/accelerators/${id}`, { headers: admin });
        const a = (await r.json()) as { state?: string; error?: { op: string; reason: string } | null };
        if (a.state !== AcceleratorStates.error) continue;
        expect(a.error?.reason, `${id} in error`).toMatch(/interrupted/);
        inError.push(id);
        await fetch(`${apiUrl}/cyborg/v1/accelerators/${id}/retry`, { method: 'POST', headers: admin });
      }
      if (inError.length) throw new Error(`in error, retried: ${inError.join(', ')}`);
      return true;
    },
    { what: 'no card left in error by the previous release', timeoutMs: 60_000, intervalMs: 500 },
  );
}
