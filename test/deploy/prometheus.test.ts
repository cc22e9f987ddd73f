import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../drivers/nvidia/index.js';
import { Metrics } from '../../metrics/index.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * What an operator loads into their monitoring: the alert rules of `deploy/prometheus/`, checked
 * and fired by Prometheus' own promtool (Debian's `prometheus` package; `.ci/run` installs it),
 * and the Grafana dashboard of `deploy/grafana/`. Both must name only series cyborg exports.
 */
const run = promisify(execFile);
const dir = new URL('../../deploy/prometheus/', import.meta.url).pathname;
const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
const required = process.env.CI === 'true';
const SKIPPED = 'promtool is not installed (apt-get install prometheus); CI installs it';

/** Every cyborg_* series an expression names (the counters' `_total` included). */
const seriesIn = (text: string): string[] => [...new Set(text.match(/\bcyborg_[a-z_]+\b/g) ?? [])];

describe('the shipped Prometheus alert rules', () => {
  it.skipIf(!promtool && !required)(`pass promtool check rules${promtool ? '' : ` (skipped: ${SKIPPED})`}`, async () => {
    const { stdout } = await run('promtool', ['check', 'rules', `${dir}cyborg-alerts.yml`]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    await run('promtool', ['check', 'config', `${dir}prometheus.yml`]);
  });

  // Bad input: the operator's own edit of the shipped file. The check docs/metrics.md gives before
  // a reload names the file and what is wrong in a line — never a Prometheus that keeps the old
  // rules silently (its reload refuses a bad file and says so only in its own log).
  it.skipIf(!promtool && !required)(`refuse a hand-edited copy with a syntax error in one clear line${promtool ? '' : ` (skipped: ${SKIPPED})`}`, async () => {
    const edited = join(mkdtempSync(join(tmpdir(), 'cyborg-rules-')), 'cyborg-alerts.yml');
    const shipped = readFileSync(`${dir}cyborg-alerts.yml`, 'utf8');
    const cases = [
      // A PromQL expression cut short (a bracket left open).
      shipped.replace('max by (host, accelerator) (cyborg_accelerator_consumers) > 0', 'max by (host, accelerator) (cyborg_accelerator_consumers > 0'),
      // YAML indentation broken (a key pushed out of its rule).
      shipped.replace(/\n {8}for: 5m\n/, '\n   for: 5m\n'),
    ];
    for (const text of cases) {
      expect(text).not.toBe(shipped);
      writeFileSync(edited, text);
      const r = spawnSync('promtool', ['check', 'rules', edited], { encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      const said = `${r.stdout}${r.stderr}`;
      expect(said).toContain(edited);
      expect(said).toMatch(/FAILED|error/i);
      expect(said).not.toMatch(/goroutine|panic/);
    }
  });

  it.skipIf(!promtool && !required)(
    `fire in promtool test rules for a quarantined held device, a card in error, a stuck transition, a lost host, a stuck drain, Placement out of sync and no conductor${promtool ? '' : ` (skipped: ${SKIPPED})`}`,
    async () => {
      const { stdout } = await run('promtool', ['test', 'rules', 'cyborg-alerts.test.yml'], { cwd: dir });
      expect(stdout).toContain('SUCCESS');
      const tests = readFileSync(`${dir}cyborg-alerts.test.yml`, 'utf8');
      for (const alert of [
        'CyborgQuarantinedDeviceHeld',
        'CyborgAcceleratorInError',
        'CyborgTransitionStuck',
        'CyborgHostLost',
        'CyborgDrainStuck',
        'CyborgPlacementOutOfSync',
        'CyborgNoConductor',
      ])
        expect(tests).toContain(`alertname: ${alert}`);
    },
  );
});

describe('the rules and the dashboard read what cyborg exports', () => {
  let s: Stack;
  let exported: Set<string>;
  beforeAll(async () => {
    s = await startStack({ fake: { gpus: 1 } });
    const m = new Metrics('conductor');
    m.watchConductor(s.conductor);
    exported = new Set([...(await m.text()).matchAll(/^# TYPE (\S+)/gm)].map((x) => x[1]!));
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('names no series the conductor or agent does not export', () => {
    const rules = readFileSync(`${dir}cyborg-alerts.yml`, 'utf8');
    const dashboard = readFileSync(new URL('../../deploy/grafana/cyborg-fleet.json', import.meta.url), 'utf8');
    const named = seriesIn(`${rules}\n${dashboard}`);
    expect(named.length).toBeGreaterThan(10);
    // A counter is exported as `<name>` in TYPE and sampled as `<name>_total`.
    expect(named.filter((n) => !exported.has(n) && !exported.has(n.replace(/_total$/, '')))).toEqual([]);
  });
});

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string }[];
}

describe('the Grafana fleet dashboard', () => {
  const dash = JSON.parse(readFileSync(new URL('../../deploy/grafana/cyborg-fleet.json', import.meta.url), 'utf8')) as {
    title: string;
    uid: string;
    schemaVersion: number;
    panels: Panel[];
    templating: { list: { name: string; type: string }[] };
    time: { from: string; to: string };
  };

  // Grafana's dashboard model (grafana/grafana kinds/dashboard): no official JSON schema ships
  // for import, so the fields an import reads are checked for their shape.
  it('is a dashboard Grafana imports: uid, schema version, a Prometheus data source variable, panels on the 24-column grid', () => {
    expect(dash).toMatchObject({
      title: expect.any(String),
      uid: expect.stringMatching(/^[a-zA-Z0-9_-]{1,40}$/),
      schemaVersion: expect.any(Number),
      time: { from: expect.any(String), to: expect.any(String) },
    });
    expect(dash.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dash.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const ids = dash.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dash.panels) {
      expect(['stat', 'timeseries', 'table', 'gauge', 'bargauge', 'text'], p.title).toContain(p.type);
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.gridPos.w * p.gridPos.h, p.title).toBeGreaterThan(0);
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      const refIds = (p.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
      for (const t of p.targets ?? []) expect(t.expr, p.title).toMatch(/cyborg_/);
    }
  });

  it.skipIf(!promtool && !required)(`has PromQL that parses in every panel${promtool ? '' : ` (skipped: ${SKIPPED})`}`, async () => {
    // promtool checks a rule's expression: each panel query becomes a recording rule of a throwaway file.
    const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr.replaceAll('$__rate_interval', '5m').replaceAll('$host', '.*')));
    const file = `${process.env.TMPDIR ?? '/tmp'}/cyborg-dashboard-rules-${process.pid}.yml`;
    const rules = exprs.map((e, i) => `      - record: cyborg:dashboard:q${i}\n        expr: ${JSON.stringify(e)}`).join('\n');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}\n`);
    const { stdout } = await run('promtool', ['check', 'rules', file]);
    expect(stdout).toContain(`SUCCESS: ${exprs.length} rules found`);
  });
});
