/**
 * Every error this project throws on purpose has its status: a walk of the source finds each
 * error class and each code thrown, and checks it against the catalogue (errors/catalogue.ts). An
 * error outside it reaches a client as a bare 500 — the lost lease did, until it was a CyborgError.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CyborgError, DATABASE_FAILED, ErrorCodes, publicMessage, refusalText } from './index.js';

const root = new URL('..', import.meta.url).pathname;
/** Not the server's source: tests, the browser's code, dependencies, build output. */
const SKIP = new Set(['node_modules', 'test', 'ui', 'dist', 'bench', 'scripts', '.git']);

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/**
 * Error classes that are not CyborgErrors, each with why no client ever sees it as one: they stop
 * a start, stay inside a process, or are rebuilt into a catalogued error before they leave it.
 */
const NOT_FOR_CLIENTS: Record<string, string> = {
  ConfigError: 'stops the start of a role (config/)',
  StartupError: 'stops the start of a role (config/)',
  PolicyFileError: 'stops the start of the api (policy file)',
  PolicyNotRegistered: 'a programming error found by the policy tests',
  PolicySyntaxError: 'a policy file that does not parse: stops the start',
  ApiError: "the CLI's view of an HTTP answer (cli/client.ts)",
  UnreachableError: 'the CLI cannot reach the api',
  UsageError: "the CLI's bad arguments",
  SignInError: "the CLI's sign-in to Keystone (cli/auth/)",
  ClientConfigError: "the CLI's sign-in: its own settings are incomplete",
  CredentialsRefusedError: "the CLI's sign-in: Keystone refused the person's credentials",
  KeystoneUnreachableError: "the CLI's sign-in: Keystone did not answer",
  NoAnswerError: 'Keystone gave no answer: rethrown as keystone.unavailable (keystoneDown)',
  RootProviderMissingError: 'the Placement sync skips the host and retries its next pass',
  PredecessorFailed: "inside the journal's flush pipeline: the flush is retried",
  PipelineFailure: "inside the journal's flush pipeline: the flush is redone alone (retried on an outage)",
  BeforeTheCard: 'the agent answers it as driver.failed with `unchanged`',
  HostOpError: 'the agent answers it as driver.failed with its reason',
  AllowListError: "a passthrough whitelist that does not parse: stops the agent's start",
  AdoptError: "cyborg adopt's one-line refusal, with its documented exit code (adopt/errors.ts)",
  MigrationRefused: 'db migrate of a database this release may not migrate: said in one line as a StartupError (db/cli.ts)',
};

describe('the error catalogue', () => {
  const files = sources(root).map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));

  it('knows every code the source throws', () => {
    const thrown =
      /\bnew (?:CyborgError|BusError|DriverError|NotFoundError|PlacementError)\(\s*'([^']+)'|\bv2Error\(\s*'([^']+)'|Object\.assign\(new Error\([^)]*\),\s*\{[^}]*\bcode:\s*'([a-z_]+\.[a-z_.]+)'/g;
    const unknown: string[] = [];
    let found = 0;
    for (const f of files) {
      for (const m of f.text.matchAll(thrown)) {
        found++;
        const code = m[1] ?? m[2] ?? m[3]!;
        if (!(code in ErrorCodes)) unknown.push(`${f.path}: ${code}`);
      }
    }
    expect(found).toBeGreaterThan(100);
    expect(unknown).toEqual([]);
  });

  it('throws at most 5 untyped Errors, each with a comment saying why', () => {
    // An untyped Error reaches a client or Nova (a BindFailed reason) as a bare 500 or a text no
    // code names: each left is one that never leaves the process, said in an `// untyped:` line.
    const untyped: string[] = [];
    const unexplained: string[] = [];
    for (const f of files) {
      const lines = f.text.split('\n');
      lines.forEach((line, i) => {
        if (!/\bnew Error\(/.test(line)) return;
        untyped.push(`${f.path}:${i + 1}`);
        if (!/\/\/ untyped: \S/.test(`${lines[i - 1] ?? ''}\n${line}`)) unexplained.push(`${f.path}:${i + 1}`);
      });
    }
    expect(unexplained).toEqual([]);
    expect(untyped.length, untyped.join('\n')).toBeLessThanOrEqual(5);
  });

  it('has no catalogued code thrown on a plain Error, where no handler can read its status', () => {
    const disguised = files.filter((f) => /Object\.assign\(new Error\([^)]*\),\s*\{[^}]*\bcode:\s*'[a-z_]+\.[a-z_.]+'/.test(f.text)).map((f) => f.path);
    expect(disguised).toEqual([]);
  });

  it('knows every error class: a CyborgError, or one no client ever sees (each with why)', () => {
    const declared = /\bclass (\w+) extends (\w+)/g;
    const classes = new Map<string, string>();
    for (const f of files) for (const m of f.text.matchAll(declared)) if (/Error$|^Error$/.test(m[2]!) || /Error$/.test(m[1]!)) classes.set(m[1]!, m[2]!);
    const cyborg = new Set(['CyborgError']);
    // Subclasses of subclasses: followed until nothing new joins.
    for (let grew = true; grew; ) {
      grew = false;
      for (const [name, base] of classes)
        if (cyborg.has(base) && !cyborg.has(name)) {
          cyborg.add(name);
          grew = true;
        }
    }
    const stray = [...classes.keys()].filter((c) => !cyborg.has(c) && !(c in NOT_FOR_CLIENTS));
    expect(stray).toEqual([]);
    // An entry for a class that is gone is a reason nobody can check.
    expect(Object.keys(NOT_FOR_CLIENTS).filter((c) => !classes.has(c))).toEqual([]);
  });

  it('gives every timeout and bus failure a status a client retries: 503 with Retry-After, not a bare 504', () => {
    for (const code of ['bus.timeout', 'bus.no_responder', 'driver.timeout', 'lease.lost', 'persistence.unavailable', 'persistence.deadline_passed'] as const) {
      expect([code, new CyborgError(code, 'x').status]).toEqual([code, 503]);
    }
    // The one 504: a write whose outcome is open. A 503 says "not made" (docs/persistence.md), and
    // this one may have been: the client reads it back before sending it again.
    expect(Object.entries(ErrorCodes).filter(([, s]) => s === 504)).toEqual([['request.outcome_unknown', 504]]);
  });

  it('lets no database text leave the process', () => {
    const pg = Object.assign(new Error('duplicate key value violates unique constraint "deployables_uuid_unique"'), {
      severity: 'ERROR',
      routine: '_bt_check_unique',
      code: '23505',
    });
    expect(publicMessage(pg)).toBe(DATABASE_FAILED);
    expect(publicMessage(new Error('insert into "accelerators" ("id", "host") values ($1, $2) - duplicate key value'))).toBe(DATABASE_FAILED);
    expect(publicMessage(new CyborgError('persistence.refused', refusalText('23505'), {}, { cause: pg }))).toBe(
      'the database refused the change: it conflicts with what is recorded',
    );
    expect(publicMessage(new CyborgError('request.invalid', 'inventory refused: deployable d-1 is reported twice'))).toContain('reported twice');
  });
});
