import Table from 'cli-table3';
import { configSources } from './boot.js';
import { Command } from 'commander';
import { adoptability } from '../adopt/index.js';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { openOrm, redact, loadDocuments, loadInventories, migratePlan, pendingOf, schemaState, startVerdict } from '../db/index.js';
import { RELEASE } from '../release/index.js';
import { olderRoles, readRoster, type Roster } from './roster.js';
import { unmatchedProfiles } from './profile-check.js';

/** cyborg-status's (oslo.upgradecheck's) results and exit codes. */
export const Result = { success: 0, warning: 1, failure: 2 } as const;
export const UNEXPECTED = 255;
type Code = (typeof Result)[keyof typeof Result];

export interface Check {
  name: string;
  code: Code;
  details?: string;
}

const WORD: Record<Code, string> = { 0: 'Success', 1: 'Warning', 2: 'Failure' };

async function database(config: Config, roster: Roster | undefined): Promise<Check> {
  const name = 'Database schema';
  if (!config.databaseUrl || config.databaseUrl === 'memory://')
    return { name, code: Result.warning, details: 'no [database] connection: a conductor keeps its state in memory only' };
  let orm;
  try {
    orm = await openOrm({ url: config.databaseUrl, pool: 1 });
    const state = await schemaState(orm);
    const start = startVerdict(state);
    const plan = migratePlan(state);
    const { expand, contract } = pendingOf(state);
    const db = redact(config.databaseUrl);
    if (!start.ok && plan.ok) {
      const fresh = state.applied.size === 0;
      return {
        name,
        code: Result.failure,
        details: `${db}: pending ${fresh ? '(a new database)' : 'expand'}: ${plan.run.join(', ')}. Run: cyborg db migrate${fresh ? '' : ' (safe beside the older roles)'}`,
      };
    }
    if (expand.length) {
      const how = plan.ok ? 'Run: cyborg db migrate (safe beside the older roles)' : plan.reason;
      return { name, code: Result.failure, details: `${db}: pending expand: ${expand.join(', ')}; ${how}` };
    }
    if (!start.ok) return { name, code: Result.failure, details: `${db}: ${start.reason}` };
    if (contract.length) {
      const older = roster ? olderRoles(roster) : [];
      const safe = older.length === 0 && !(roster?.blind && config.natsUrl);
      const why = safe
        ? 'contract is safe now. Run: cyborg db contract'
        : `contract is not safe now: ${older.length ? `${older.length} older role(s) run (listed under Roles)` : roster?.blind}`;
      return { name, code: Result.warning, details: `${db}: pending contract: ${contract.join(', ')}; ${why}` };
    }
    return { name, code: Result.success, details: `${db}: at cyborg ${RELEASE}'s schema, expanded and contracted` };
  } catch (err) {
    return { name, code: Result.failure, details: `cannot reach ${redact(config.databaseUrl)}: ${(err as Error).message}` };
  } finally {
    await orm?.close();
  }
}

/** The roles seen on the bus (host, role, release, protocol): what a rolling upgrade has left to do. */
function roles(roster: Roster | undefined, error?: string): Check {
  const name = 'Roles';
  if (!roster) return { name, code: Result.warning, details: `could not read the roster: ${error}` };
  const older = olderRoles(roster);
  const rows = roster.roles.map((r) => `${r.host.padEnd(24)} ${r.role.padEnd(10)} ${r.release.padEnd(8)} ${r.protocol}`);
  const text = [`${'HOST'.padEnd(24)} ${'ROLE'.padEnd(10)} ${'RELEASE'.padEnd(8)} PROTOCOL`, ...rows].join('\n');
  const note = roster.blind ? `\n${roster.blind}` : '';
  return older.length
    ? { name, code: Result.warning, details: `${older.length} role(s) older than ${RELEASE}: upgrade them before cyborg db contract\n${text}${note}` }
    : { name, code: Result.success, details: `every role seen runs ${RELEASE}\n${text}${note}` };
}

/**
 * Device profiles that no recorded provider can satisfy: after a switch from another Cyborg
 * release (other trait spellings, pci_driver), the flavors that would no longer find a host.
 */
async function deviceProfiles(config: Config): Promise<Check> {
  const name = 'Device profiles';
  if (!config.databaseUrl || config.databaseUrl === 'memory://')
    return { name, code: Result.success, details: 'no [database] connection: nothing recorded to check' };
  let orm;
  try {
    orm = await openOrm({ url: config.databaseUrl, pool: 1 });
    const em = orm.em.fork();
    const [docs, inventories] = await Promise.all([loadDocuments(em), loadInventories(em)]);
    const profiles = docs.filter((d) => d.collection === 'device_profiles').map((d) => d.body as { name: string; groups: Record<string, string>[] });
    if (inventories.size === 0) return { name, code: Result.success, details: 'no inventory recorded yet: start the agents, then check again' };
    const unmatched = unmatchedProfiles(profiles, inventories);
    return unmatched.length
      ? { name, code: Result.warning, details: `${unmatched.length} of ${profiles.length} match no recorded provider: ${unmatched.join('; ')}` }
      : { name, code: Result.success };
  } catch (err) {
    return { name, code: Result.warning, details: `could not read the profiles and inventories: ${(err as Error).message}` };
  } finally {
    await orm?.close();
  }
}

/** Any HTTP answer below 500 means the service is there (Placement and Keystone answer GET / with their versions). */
async function reachable(name: string, url: string | undefined, what: string): Promise<Check> {
  if (!url) return { name, code: Result.success, details: `not configured (${what})` };
  try {
    // Imported here: `cli/main` loads this file for every command, the all-in-one's included (issue 43).
    const { request } = await import('undici');
    const res = await request(url, { method: 'GET', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5_000) });
    await res.body.dump();
    return res.statusCode < 500 ? { name, code: Result.success } : { name, code: Result.failure, details: `${url} answered ${res.statusCode}` };
  } catch (err) {
    const e = err as Error & { code?: string };
    return { name, code: Result.failure, details: `cannot reach ${url}: ${e.name === 'TimeoutError' ? 'no answer within 5 s' : (e.code ?? e.message)}` };
  }
}

/** The checks, in cyborg-status's order: what must hold before the new code runs. */
export async function upgradeChecks(config: Config, configWarnings: string[]): Promise<Check[]> {
  const keystone = config.keystoneAuthtoken.authUrl ?? config.placement.authUrl ?? config.nova.authUrl;
  let rosterError: string | undefined;
  const roster = await readRoster(config).catch((err: unknown) => {
    rosterError = (err as Error).message;
    return undefined;
  });
  return [
    configWarnings.length
      ? { name: 'Configuration', code: Result.warning, details: configWarnings.join('; ') }
      : { name: 'Configuration', code: Result.success },
    await database(config, roster),
    roles(roster, rosterError),
    await deviceProfiles(config),
    await reachable('Placement API', config.placementUrl, 'no [placement] endpoint_override'),
    await reachable('Keystone', keystone, 'no [keystone_authtoken] auth_url'),
  ];
}

function render(checks: Check[]): string {
  const table = new Table({ head: ['Upgrade Check Results'], style: { head: [], border: [] } });
  for (const c of checks) table.push([`Check: ${c.name}\nResult: ${WORD[c.code]}\nDetails: ${c.details ?? 'None'}`]);
  return `${table.toString()}\n`;
}

/**
 * `cyborg status upgrade-check`, as `cyborg-status upgrade check`: is the database at this code's
 * schema, is the configuration valid, are Placement and Keystone reachable where configured. Exit
 * code: 0 all succeeded, 1 a warning, 2 a failure, 255 the check itself failed.
 */
export function statusCommand(): Command {
  const status = new Command('status').description('checks before and after an upgrade (as cyborg-status)');
  status
    .command('upgrade-check')
    .description(
      "database at this code's schema (pending expand and contract, whether contract is safe now), the roles seen with their release and protocol, configuration valid, Placement and Keystone reachable; exit 0 success, 1 warning, 2 failure, 255 error",
    )
    .option('--cyborg-database <url>', 'also check that this OpenStack Cyborg database can be adopted (cyborg adopt; docs/adopt.md)')
    .action(async (flags: { cyborgDatabase?: string }, cmd: Command) => {
      try {
        const warnings: string[] = [];
        let config: Config;
        try {
          config = loadConfig({}, process.env, { ...configSources(cmd), onWarning: (m) => warnings.push(m) });
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          process.stdout.write(render([{ name: 'Configuration', code: Result.failure, details: err.message }]));
          process.exitCode = Result.failure;
          return;
        }
        const checks = await upgradeChecks(config, warnings);
        if (flags.cyborgDatabase) checks.push({ name: 'Cyborg adoption', ...(await adoptability(flags.cyborgDatabase)) });
        process.stdout.write(render(checks));
        process.exitCode = Math.max(...checks.map((c) => c.code));
      } catch (err) {
        process.stderr.write(`cyborg: upgrade-check could not run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exitCode = UNEXPECTED;
      }
    });
  return status;
}
