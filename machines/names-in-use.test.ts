import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { ACCELERATOR_STATES, ARQ_STATES, DRIVER_STATES, HOST_STATES } from './states.js';

const ROOT = resolve(import.meta.dirname, '..');
const NAMES = [...new Set([...ACCELERATOR_STATES, ...ARQ_STATES, ...HOST_STATES, ...DRIVER_STATES])].join('|');
/** A state (or a transition's end) compared with a string of its own, either way round. */
const LHS = String.raw`(?:\.state|\.to|\.from|\.value|\bstate|\bto|\bfrom|cyborgState|hostState)`;
const COMPARED = new RegExp(String.raw`${LHS}\s*[!=]==\s*'(${NAMES})'|'(${NAMES})'\s*[!=]==\s*[\w$.?!]*${LHS}\b`);

/**
 * The lifecycle's words belong to machines/: outside it, code compares with the names objects
 * (`AcceleratorStates.removed`) or asks tags, so renaming a state is a type error, not a silent
 * miss. Tests may say states as strings: they are what the machines are held to.
 */
it('no production code outside machines/ compares a state with a string of its own', () => {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.tsx'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n').filter((f) => f && !f.startsWith('machines/') && !f.startsWith('test/') && !f.endsWith('.test.ts') && !f.startsWith('node_modules/'));
  expect(files.length, 'the source files were listed').toBeGreaterThan(100);
  const found: string[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(resolve(ROOT, f), 'utf8');
    } catch {
      continue; // listed but deleted in the working tree
    }
    text.split('\n').forEach((line, i) => {
      if (COMPARED.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(found, `compare with the machines' names objects instead:\n  ${found.join('\n  ')}\n`).toEqual([]);
});
