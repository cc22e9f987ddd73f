import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { freshDatabase, query, urlFor } from '../support/database.js';
import { cyborgProcess, scratchDir } from './spawn.js';

/** `cyborg conductor` on `database`, as its unit starts it (one conductor, no metrics listener). */
const conductor = (database: string) =>
  cyborgProcess([
    'conductor',
    '--nats',
    svc.nats!,
    '--no-leases',
    '--metrics-port',
    '-1',
    '--prefix',
    `st${randomBytes(3).toString('hex')}`,
    '--database',
    database,
  ]);

const databases = async (): Promise<string[]> => (await query<{ datname: string }>(svc.postgres!, 'select datname from pg_database')).map((r) => r.datname);

describe.skipIf(!svc.postgres || !svc.nats)('a role never runs on a database cyborg db migrate did not make ready', () => {
  let empty: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    empty = await freshDatabase('startup_empty', { migrated: false });
  });
  afterAll(async () => empty?.drop());

  it('a misspelt database name: one line naming [database] connection (password masked) and db migrate, exit 3, nothing created', async () => {
    const name = `cyborg_typo_${randomBytes(3).toString('hex')}`;
    const url = urlFor(name).replace('postgres@', 'postgres:s3cret@');
    const r = await conductor(url);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      `cyborg: [database] connection (DATABASE_URL) = postgres://postgres:***@${new URL(url).host}/${name}: database "${name}" does not exist; create and migrate it with: cyborg db migrate --create\n`,
    );
    expect(await databases()).not.toContain(name);
  });

  it('a database the code has not migrated: exit 3 naming what is pending, and no table is made', async () => {
    const r = await conductor(empty.url);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^cyborg: \[database\] connection \(DATABASE_URL\) = postgres:\/\/\S+: not at this code's schema \(pending: Migration\d+_initial, .*\); run: cyborg db migrate\n$/,
    );
    expect(await query(empty.url, `select table_name from information_schema.tables where table_schema = 'public'`)).toEqual([]);
  });

  it('a server that refuses the user, or one nobody answers at: exit 4, one line each', async () => {
    const [refused, down] = await Promise.all([
      conductor(urlFor('test').replace('postgres@', 'nobody_here@')),
      conductor('postgres://postgres@127.0.0.1:1/cyborg'),
    ]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(
      /^cyborg: \[database\] connection \(DATABASE_URL\) = postgres:\/\/nobody_here@\S+: the server refuses the user \(.*nobody_here.*\)\n$/,
    );
    expect(down.code).toBe(4);
    expect(down.stderr).toMatch(
      /^cyborg: \[database\] connection \(DATABASE_URL\) = postgres:\/\/postgres@127\.0\.0\.1:1\/cyborg: cannot reach the database \(.*ECONNREFUSED.*\)\n$/,
    );
  });
});

describe('cyborg db migrate migrates only what it is pointed at', () => {
  it('with no [database] connection it refuses (the embedded database only with --embedded), creating nothing', async () => {
    const cwd = scratchDir();
    const r = await cyborgProcess(['db', 'migrate'], { cwd });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "cyborg: no [database] connection (DATABASE_URL, --database-url) is set: nothing to migrate; for the all-in-one's embedded database under the data directory, run: cyborg db migrate --embedded\n",
    );
    expect(existsSync(join(cwd, '.cyborg'))).toBe(false);
  });

  it('a misspelt [database] header is refused naming the section meant, creating nothing', async () => {
    const cwd = scratchDir();
    const conf = join(cwd, 'cyborg.conf');
    writeFileSync(conf, '[databse]\nconnection = postgresql://cyborg:secret@db.example/cyborg\n');
    const r = await cyborgProcess(['db', 'migrate', '--config-file', conf], { cwd });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`cyborg: invalid configuration: ${conf}: unknown section [databse] (did you mean [database]?)\n`);
    expect(existsSync(join(cwd, '.cyborg'))).toBe(false);
  });
});
