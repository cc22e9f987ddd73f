/**
 * `npm test`: probes PostgreSQL, NATS and Placement, runs every vitest project, and ends by
 * naming what was skipped and why. With CI=true a missing service is a failure, not a skip.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { probeServices, SERVICE_WHY, type Services } from './services.js';
import { dropOperatorSettings } from './support/own-env.js';

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(
    `npm test needs Node.js >= 22 (running ${process.versions.node}). Run a plain \`npm install\` (without --ignore-scripts) so the project's Node 24 is installed.`,
  );
  process.exit(1);
}

// On a controller the shell carries the operator's cloud and config (admin-openrc, CYBORG_CONFIG_FILE):
// the tests use their own, so these are dropped here (and again in every worker, test/own-env-setup.ts).
const ignored = dropOperatorSettings();
if (ignored.length > 0) console.log(`npm test ignores the shell's OpenStack and cyborg settings (tests use their own): ${ignored.join(', ')}`);

const ci = process.env.CI === 'true' || process.env.CI === '1';
const found = await probeServices();
const missing = (Object.keys(found) as (keyof Services)[]).filter((k) => !found[k]);
if (ci && missing.length > 0) {
  console.error(`CI=true but these services are unreachable:\n${missing.map((k) => `  - ${SERVICE_WHY[k]}`).join('\n')}`);
  process.exit(1);
}

mkdirSync('.tmp', { recursive: true });
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', '--outputFile.json=.tmp/vitest.json', ...process.argv.slice(2)];
const res = spawnSync('npx', args, {
  stdio: 'inherit',
  env: { ...process.env, CYBORG_TEST_SERVICES: JSON.stringify(found) },
});

interface JsonReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: { name: string; assertionResults: { status: string; fullName: string }[] }[];
}

let report: JsonReport | undefined;
try {
  report = JSON.parse(readFileSync('.tmp/vitest.json', 'utf8')) as JsonReport;
} catch {
  // vitest did not get far enough to write a report; its exit code says why.
}

if (missing.length > 0) {
  console.log('\nSkipped because a service is not reachable here:');
  for (const k of missing) console.log(`  - tests needing ${SERVICE_WHY[k]}`);
}
if (report) {
  const skipped = report.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'skipped' || a.status === 'pending').map((a) => a.fullName));
  if (skipped.length > 0) {
    console.log(`\n${skipped.length} skipped test(s):`);
    for (const s of skipped.slice(0, 50)) console.log(`  - ${s}`);
  }
  console.log(`\ntests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`);
}
process.exit(res.status ?? 1);
