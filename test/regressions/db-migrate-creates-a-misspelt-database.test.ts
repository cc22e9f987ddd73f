/**
 * Issue 42: `cyborg db migrate` on a misspelt database name created it silently (printed
 * "applied: …", exit 0), so the README's upgrade step still ended with a conductor on a new,
 * empty database. Now it creates nothing unless told to (`--create`), and says what it did.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { query, urlFor } from '../support/database.js';
import { cyborgProcess } from '../cli/spawn.js';

const databases = async (): Promise<string[]> => (await query<{ datname: string }>(svc.postgres!, 'select datname from pg_database')).map((r) => r.datname);

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: svc.postgres! });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

describe.skipIf(!svc.postgres)('cyborg db migrate creates no database unless told to', () => {
  const hex = randomBytes(3).toString('hex');
  const name = `cyborg_migrate_typo_${hex}`;
  const role = `cyborg_nocreate_${hex}`;
  afterAll(async () => {
    await admin(`drop database if exists "${name}" with (force)`);
    await admin(`drop database if exists "${name}_denied" with (force)`);
    await admin(`drop role if exists "${role}"`);
  });

  it('a database that does not exist: one line naming it and --create, exit 3, nothing created', async () => {
    const url = urlFor(name);
    const r = await cyborgProcess(['db', 'migrate', '--database-url', url]);
    expect([r.code, r.stdout]).toEqual([3, '']);
    expect(r.stderr).toBe(
      `cyborg: [database] connection (DATABASE_URL) = ${url}: database "${name}" does not exist; nothing created (a misspelt name?). To create it: cyborg db migrate --create\n`,
    );
    expect(await databases()).not.toContain(name);
  });

  it('--create makes it and says so; a second run says it is up to date', async () => {
    const url = urlFor(name);
    const r = await cyborgProcess(['db', 'migrate', '--create', '--database-url', url]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^created: database "${name}"\\napplied: Migration\\d+_initial, .* \\(${url.replace(/[.]/g, '\\.')}\\)\\n$`));
    expect(await databases()).toContain(name);
    const again = await cyborgProcess(['db', 'migrate', '--create', '--database-url', url]);
    expect([again.code, again.stdout]).toEqual([0, `up to date (${url})\n`]);
  });

  it('--create for a user who may not create databases: one line saying what to do, exit 4', async () => {
    await admin(`create role "${role}" login nocreatedb`);
    const url = urlFor(`${name}_denied`).replace('postgres@', `${role}@`);
    const r = await cyborgProcess(['db', 'migrate', '--create', '--database-url', url]);
    expect([r.code, r.stdout]).toEqual([4, '']);
    expect(r.stderr).toBe(
      `cyborg: [database] connection (DATABASE_URL) = ${url}: --create: the user may not create database "${name}_denied" (permission denied to create database); have a superuser run CREATE DATABASE, then cyborg db migrate\n`,
    );
    expect(await databases()).not.toContain(`${name}_denied`);
  });
});
