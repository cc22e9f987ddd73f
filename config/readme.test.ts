import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The README must tell the truth: every environment variable the configuration reads is named on
 * it. A setting added to config/index.ts without a line in the README fails here.
 */
describe('README configuration section', () => {
  it('names every environment variable config/index.ts reads', () => {
    const code = readFileSync(new URL('./index.ts', import.meta.url), 'utf8');
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const names = new Set<string>();
    for (const m of code.matchAll(/env\.([A-Z][A-Z0-9_]+)|env, '([A-Z][A-Z0-9_]+)'/g)) names.add((m[1] ?? m[2])!);
    expect(names.size).toBeGreaterThan(20);
    const missing = [...names].filter((n) => !readme.includes(n));
    expect(missing).toEqual([]);
  });
});
