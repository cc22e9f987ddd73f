import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACCELERATOR_STATES, ARQ_STATES, DRIVER_STATES, HOST_DELETED, HOST_STATES, NOT_YET } from './states.js';

const ROOT = resolve(import.meta.dirname, '..');
const NAMES = [...new Set([...ACCELERATOR_STATES, ...ARQ_STATES, ...HOST_STATES, ...DRIVER_STATES])].join('|');
/** A transition's other ends (a birth's start, a deleted host's end): too common as words to look for alone. */
const ENDS = `${NAMES}|${NOT_YET}|${HOST_DELETED}`;
/** A state (or a transition's end) compared with a string of its own, either way round. */
const LHS = String.raw`(?:\.state|\.to|\.from|\.value|\bstate|\bto|\bfrom|cyborgState|hostState)`;

/** The ways a state's name is spelled as a string of its own, each with what it catches. */
const SPELLINGS: [string, RegExp][] = [
  ['compared', new RegExp(String.raw`${LHS}\s*[!=]==\s*'(${ENDS})'|'(${ENDS})'\s*[!=]==\s*[\w$.?!]*${LHS}\b`)],
  ['a switch case', new RegExp(String.raw`\bcase\s+'(${NAMES})'\s*:`)],
  ['a set lookup', new RegExp(String.raw`\.has\(\s*'(${NAMES})'\s*\)`)],
  ['a set of names', new RegExp(String.raw`new Set(?:<[^>]*>)?\(\s*\[[^\]]*'(${NAMES})'`)],
  // A pair whose value is one plain token (`['online', 0]`), not a table row labelled with a word (`['attached', a.allocations…]`).
  ['a map entry', new RegExp(String.raw`\[\s*'(${NAMES})'\s*,\s*[\w$.'"-]+\s*\]`)],
];

/** The first spelling `line` holds, if any; comments are prose and may name states freely. */
function spelling(line: string): string | undefined {
  const code = line.trim();
  if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return undefined;
  return SPELLINGS.find(([, re]) => re.test(code))?.[0];
}

/**
 * The lifecycle's words belong to machines/: outside it, code compares with the names objects
 * (`AcceleratorStates.removed`), builds from the lists (`HOST_STATES`) or asks tags, so renaming a
 * state is a type error, not a silent miss. Tests may say states as strings: they are what the
 * machines are held to.
 */
describe('state names in use', () => {
  it('no production code outside machines/ spells a state as a string of its own', () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.tsx'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && !f.startsWith('machines/') && !f.startsWith('test/') && !f.endsWith('.test.ts') && !f.startsWith('node_modules/'));
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
        const how = spelling(line);
        if (how) found.push(`${f}:${i + 1} (${how}): ${line.trim()}`);
      });
    }
    expect(found, `use the machines' names objects, lists or tags instead:\n  ${found.join('\n  ')}\n`).toEqual([]);
  });

  it.each([
    ["a.state === 'removed'", 'compared'],
    ["if ('Bound' !== v.cyborgState) return;", 'compared'],
    ["ev.from === 'none'", 'compared'],
    ["    case 'inactive': return 'off';", 'a switch case'],
    ["if (IN_FLIGHT.has('BindStarted')) go();", 'a set lookup'],
    ["const RESOLVED = new Set(['Bound', 'BindFailed', 'Deleting']);", 'a set of names'],
    ["const s = new Set<string>([x, 'lost']);", 'a set of names'],
    ["const counts = new Map([['online', 0], ['stale', 0]]);", 'a map entry'],
  ])('catches %j as %s', (line, how) => {
    expect(spelling(line)).toBe(how);
  });

  it.each([
    "case 'none': return;", // not a state (a group policy, a drain's state)
    "if (level === 'error') warn();", // a log level, compared with no state-like name
    "const ok = new Set(['GPU', 'FPGA']);",
    "const pairs = [['mig', 1], ['vfs', 2]];",
    "['attached', a.allocations.map((x) => x.instanceUuid).join(' ') || 'none'],", // a CLI row's label
    'if (AcceleratorStates.removed === a.state) return;',
    "// a state compared as case 'inactive' in prose",
    " * `new Set(['Bound'])` in a doc comment",
  ])('leaves %j alone', (line) => {
    expect(spelling(line)).toBeUndefined();
  });
});
