import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cyborgProcess } from '../cli/spawn.js';
import { svc } from '../services.js';
import { freshDatabase, query, urlFor } from '../support/database.js';
import { loadDump, MARIADB, mariadbUp, type LoadedDump } from './cyborg-db.js';

/** The "Cyborg adoption" check of `cyborg status upgrade-check`'s table: its result and details, as one text. */
function adoptionCheck(stdout: string): { result: string; details: string } {
  const text = stdout.replace(/[│|]/g, ' ');
  const m = /Check: Cyborg adoption\s+Result: (\w+)\s+Details: ([\s\S]*?)(?:\n\s*[+├└=─-]{3}|$)/.exec(text);
  if (!m) throw new Error(`no Cyborg adoption check in:\n${stdout}`);
  return { result: m[1]!, details: m[2]!.replace(/\s+/g, ' ').trim() };
}

/**
 * `cyborg status upgrade-check --cyborg-database <url>` says whether a Cyborg database can be
 * adopted (docs/adopt.md): Success when everything would be, Warning naming how many rows would be
 * skipped, Failure with the one line `cyborg adopt` would stop on. It only reads the source.
 */
describe.skipIf(!mariadbUp || !svc.postgres)('cyborg status upgrade-check tells whether a Cyborg database can be adopted', () => {
  let target: Awaited<ReturnType<typeof freshDatabase>>;
  const dropped: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    target = await freshDatabase('adoptcheck');
  });
  afterAll(async () => {
    for (const d of dropped) await d();
    await target?.drop();
  });

  const dump = async (sql?: string): Promise<string> => {
    const src = await loadDump('master-bound.sql');
    dropped.push(src.drop);
    if (sql) {
      const c = await mysql.createConnection({ uri: MARIADB, database: src.name, multipleStatements: true });
      await c.query(`SET FOREIGN_KEY_CHECKS = 0; ${sql}`);
      await c.end();
    }
    return src.url;
  };
  const check = async (url: string) => {
    const r = await cyborgProcess(['status', 'upgrade-check', '--cyborg-database', url], { env: { DATABASE_URL: target.url }, timeoutMs: 90_000 });
    return { code: r.code, ...adoptionCheck(r.stdout) };
  };

  it('Success for a real Cyborg database, Warning for one with rows it would skip, Failure for one it cannot adopt', async () => {
    const ok = await check(await dump());
    expect(ok.result).toBe('Success');
    expect(ok.details).toMatch(/at Cyborg schema 6c77bd6afea5 .*: 28 rows of 1 hosts adoptable$/);

    // A device of a driver we do not have: its rows would be skipped, the rest adopted.
    const skips = await check(await dump("UPDATE deployables SET driver_name = 'inspur'"));
    expect(skips.result).toBe('Warning');
    expect(skips.details).toMatch(/would be skipped \(cyborg adopt --dry-run names them\)$/);
    expect(skips.code).toBeGreaterThanOrEqual(1);

    const refused = await check(await dump("UPDATE alembic_version SET version_num = 'ffffffffffff'"));
    expect(refused.result).toBe('Failure');
    expect(refused.details).toMatch(/newer than any Cyborg revision/);
    expect(refused.code).toBe(2);
  }, 240_000);
});

/** The same check on Cyborg's database on PostgreSQL (a pg_dump of Cyborg 9.0.0's, `postgresql+psycopg2://`), and on it made unknown. */
describe.skipIf(!svc.postgres)('cyborg status upgrade-check on a Cyborg database on PostgreSQL', () => {
  let target: Awaited<ReturnType<typeof freshDatabase>>;
  let source: LoadedDump;
  beforeAll(async () => {
    target = await freshDatabase('adoptcheckpg');
    source = await loadDump('pg-zed-bound.sql');
  });
  afterAll(async () => {
    await source?.drop();
    await target?.drop();
  });

  it('Success for the real database, Failure once its revision is unknown; the source unchanged by the check', async () => {
    const check = async () => {
      const r = await cyborgProcess(['status', 'upgrade-check', '--cyborg-database', source.url], { env: { DATABASE_URL: target.url }, timeoutMs: 90_000 });
      return { code: r.code, ...adoptionCheck(r.stdout) };
    };
    const before = await source.checksum();
    const ok = await check();
    expect(ok.result).toBe('Success');
    expect(ok.details).toMatch(/^postgresql\+psycopg2:\/\/.* at Cyborg schema 4cc1d79978fc .*: 28 rows of 1 hosts adoptable$/);
    expect(await source.checksum()).toBe(before);

    await query(urlFor(source.name), "UPDATE alembic_version SET version_num = 'ffffffffffff'");
    const refused = await check();
    expect(refused.result).toBe('Failure');
    expect(refused.details).toMatch(/newer than any Cyborg revision/);
    expect(refused.code).toBe(2);
  }, 240_000);
});
