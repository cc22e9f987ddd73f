/**
 * Issue 42: `CyborgQuarantinedDeviceHeld` carried the health's `severity` (fatal, transient) from
 * `cyborg_accelerator_health`, and the rule's own `severity: critical` overwrote it, so the page
 * no longer said whether the fault was fatal; and the alert named the card by uuid only. Now the
 * health's is `health_severity` beside the page's `severity`, and the alert names the card's
 * host and name as well as its uuid. Fired by Prometheus' own promtool on the shipped rules.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const rules = new URL('../../deploy/prometheus/cyborg-alerts.yml', import.meta.url).pathname;
const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
const required = process.env.CI === 'true';
const SKIPPED = ' (skipped: promtool is not installed; apt-get install prometheus, as CI does)';

const dir = mkdtempSync(join(tmpdir(), 'cyborg-severity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const card = 'host="compute-1",accelerator="3f1c9a2e-0b4d-4c57-9a61-2d7e8f90a1b3",name="gpu-0000:3b:00.0"';

describe('the quarantine alerts keep the health severity and name the card', () => {
  it.skipIf(!promtool && !required)(`a fatal quarantine under an instance pages critical and still says fatal${promtool ? '' : SKIPPED}`, async () => {
    const labels = (severity: string) => `
              severity: ${severity}
              health_severity: fatal
              reason_class: xid
              host: compute-1
              accelerator: 3f1c9a2e-0b4d-4c57-9a61-2d7e8f90a1b3
              name: gpu-0000:3b:00.0`;
    writeFileSync(
      join(dir, 'severity.test.yml'),
      `rule_files: ['${rules}']
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'cyborg_accelerator_health{job="cyborg-conductor",${card},status="quarantined",severity="fatal",reason_class="xid"}'
        values: '1x20'
      - series: 'cyborg_accelerator_consumers{job="cyborg-conductor",${card},state="attached"}'
        values: '1x20'
    alert_rule_test:
      - eval_time: 16m
        alertname: CyborgQuarantinedDeviceHeld
        exp_alerts:
          - exp_labels:${labels('critical')}
            exp_annotations:
              summary: "Quarantined accelerator gpu-0000:3b:00.0 on compute-1 still holds an instance"
              description: "Health is quarantined (fatal, xid) while an instance uses it. \`cyborg accelerator show 3f1c9a2e-0b4d-4c57-9a61-2d7e8f90a1b3\` names the reason and the consumers; migrate them, then reset or remove the card."
      - eval_time: 16m
        alertname: CyborgDeviceQuarantined
        exp_alerts:
          - exp_labels:${labels('warning')}
            exp_annotations:
              summary: "Accelerator gpu-0000:3b:00.0 on compute-1 is quarantined"
              description: "Out of service and reserved in Placement (fatal, xid). A fatal one stays until \`cyborg accelerator reset 3f1c9a2e-0b4d-4c57-9a61-2d7e8f90a1b3\` or clear-health."
`,
    );
    const { stdout } = await run('promtool', ['test', 'rules', 'severity.test.yml'], { cwd: dir });
    expect(stdout).toContain('SUCCESS');
  });
});
