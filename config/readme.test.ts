import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPTIONS } from './options.js';
import { configTable, TABLE_BEGIN, TABLE_END } from './sample.js';

/**
 * The README must tell the truth: its configuration table is the one generated from the schema
 * (`npm run docs:config` rewrites it), so a setting added to config/ without it fails here.
 */
describe('README configuration section', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

  it('holds the table generated from the schema', () => {
    const a = readme.indexOf(TABLE_BEGIN);
    const b = readme.indexOf(TABLE_END);
    expect(a).toBeGreaterThan(0);
    expect(readme.slice(a + TABLE_BEGIN.length, b).trim()).toBe(configTable());
  });

  // A row is the schema's description and the option's help joined: each must add its own words.
  // [nats] metrics_port said "this process's health + /metrics listener" twice.
  it('says nothing twice in one row', () => {
    const repeated = configTable()
      .split('\n')
      .slice(2)
      .flatMap((row) => {
        const what = row.split(' | ').at(-1)!.replace(/ \|$/, '');
        const clauses = what.split(/[;,] /).map((c) => c.trim().toLowerCase());
        return clauses.filter((c, i) => c !== '' && clauses.indexOf(c) !== i).map((c) => `${row.split(' | ')[0]}: ${c}`);
      });
    expect(repeated).toEqual([]);
  });

  it('names every environment variable the loader reads', () => {
    const names = [...OPTIONS.flatMap((o) => (o.env ? [o.env] : [])), 'CYBORG_CONFIG_FILE'];
    expect(names.length).toBeGreaterThan(50);
    expect(names.filter((n) => !readme.includes(n))).toEqual([]);
  });
});
