import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCHEMA_REVISION } from '../release/index.js';
import { contractPlan, migratePlan, MIGRATIONS, startVerdict, type ReleaseMigrations, type SchemaState } from './releases.js';

const files = readdirSync(new URL('./migrations', import.meta.url))
  .filter((f) => /\.ts$/.test(f))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();

/** Three releases, so that "two behind" and "one ahead" can be said. */
const M: ReleaseMigrations[] = [
  { release: '1.0.0', expand: ['a1', 'a2'], contract: [] },
  { release: '1.1.0', expand: ['b1'], contract: ['b2'] },
  { release: '1.2.0', expand: ['c1'], contract: ['c2'] },
];
const state = (applied: string[], releases: [string, boolean][] = []): SchemaState => ({
  applied: new Set(applied),
  releases: releases.map(([release, contracted]) => ({ release, expanded: true, contracted })),
});

describe('the releases’ migrations', () => {
  it('name every file in db/migrations once, and the last is the schema revision', () => {
    const named = MIGRATIONS.flatMap((r) => [...r.expand, ...r.contract]);
    expect([...named].sort()).toEqual(files);
    expect(new Set(named).size).toBe(named.length);
    expect(SCHEMA_REVISION).toBe(named.at(-1));
  });

  it('a role starts at its revision, expanded or contracted, and one release ahead in expand only', () => {
    expect(startVerdict(state(['a1', 'a2', 'b1'], [['1.1.0', false]]), M, '1.1.0').ok).toBe(true);
    expect(startVerdict(state(['a1', 'a2', 'b1', 'b2'], [['1.1.0', true]]), M, '1.1.0').ok).toBe(true);
    expect(
      startVerdict(
        state(
          ['a1', 'a2', 'b1', 'b2', 'c1'],
          [
            ['1.1.0', true],
            ['1.2.0', false],
          ],
        ),
        M,
        '1.1.0',
      ).ok,
    ).toBe(true);
  });

  it('refuses a contracted newer schema (a downgrade), one two releases ahead, and one behind, in one line each', () => {
    const down = startVerdict(
      state(
        ['a1', 'a2', 'b1', 'b2', 'c1', 'c2'],
        [
          ['1.1.0', true],
          ['1.2.0', true],
        ],
      ),
      M,
      '1.1.0',
    );
    expect(down).toEqual({
      ok: false,
      reason: expect.stringMatching(/contracted by cyborg 1\.2\.0: this 1\.1\.0 cannot run on it .*restore the backup taken before contract/),
    });
    const far = startVerdict(
      state(
        ['a1', 'a2'],
        [
          ['1.1.0', false],
          ['1.2.0', false],
        ],
      ),
      M,
      '1.0.0',
    );
    expect(far).toEqual({ ok: false, reason: expect.stringMatching(/two releases or more ahead of this 1\.0\.0: run 1\.2\.0/) });
    const behind = startVerdict(state(['a1', 'a2']), M, '1.1.0');
    expect(behind).toEqual({ ok: false, reason: expect.stringMatching(/not at this code.s schema \(pending: b1\); run: cyborg db migrate/) });
  });

  it('db migrate runs everything on an empty database, the expand only from the release before, and refuses any other', () => {
    expect(migratePlan(state([]), M, '1.2.0')).toEqual({ ok: true, run: ['a1', 'a2', 'b1', 'b2', 'c1', 'c2'] });
    expect(migratePlan(state(['a1', 'a2', 'b1', 'b2'], [['1.1.0', true]]), M, '1.2.0')).toEqual({ ok: true, run: ['c1'] });
    // Two releases behind: 1.1.0 never ran.
    expect(migratePlan(state(['a1', 'a2']), M, '1.2.0')).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /at cyborg 1\.0\.0's schema: cyborg 1\.2\.0 migrates only from 1\.1\.0, the release before it; first run 1\.1\.0's cyborg db migrate and db contract/,
      ),
    });
    // The previous release expanded but never contracted.
    expect(migratePlan(state(['a1', 'a2', 'b1'], [['1.1.0', false]]), M, '1.2.0')).toEqual({
      ok: false,
      reason: expect.stringMatching(/1\.1\.0's contract has not run/),
    });
    // A newer release's database.
    expect(migratePlan(state(['a1', 'a2', 'b1', 'b2', 'c1'], [['1.2.0', false]]), M, '1.1.0')).toEqual({
      ok: false,
      reason: expect.stringMatching(/newer than this 1\.1\.0/),
    });
  });

  it('db contract runs the contract once the expand has run', () => {
    expect(contractPlan(state(['a1', 'a2', 'b1'], [['1.1.0', false]]), M, '1.1.0')).toEqual({ ok: true, run: ['b2'] });
    expect(contractPlan(state(['a1', 'a2']), M, '1.1.0').ok).toBe(false);
  });
});
