/**
 * Long functions, counted on every run: a function over 80 lines is usually several concerns (a
 * route plugin declaring every route of a resource, a wiring that builds and starts everything).
 * The count may only fall; STYLE.md asks for ~40, and a longer one says why in a comment.
 *
 * Production code only, as the architecture test; a function's lines run from its first line to
 * its last, nested functions included (a plugin's routes count in the plugin).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const ROOMS = [
  'actors',
  'adopt',
  'api',
  'bus',
  'cli',
  'config',
  'control',
  'db',
  'drivers',
  'errors',
  'ids',
  'machines',
  'metrics',
  'model',
  'openstack',
  'placement-query',
  'policy',
  'release',
  'roles',
];
const LONG = 80;
/** Functions over LONG lines today: lower it as they are split, never raise it. */
const MOST = 10;

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'migrations') sources(path, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Every function, method and arrow function of `path` longer than LONG lines, as `path:line name (n lines)`. */
export function longFunctions(path: string): string[] {
  const src = ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.Latest, true);
  const long: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = src.getLineAndCharacterOfPosition(node.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > LONG) {
        const named =
          node.name && ts.isIdentifier(node.name)
            ? node.name.text
            : ts.isVariableDeclaration(node.parent) && ts.isIdentifier(node.parent.name)
              ? node.parent.name.text
              : '(anonymous)';
        long.push(`${path}:${first + 1} ${named} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return long;
}

it(`has at most ${MOST} functions over ${LONG} lines`, () => {
  const long = ROOMS.flatMap((r) => sources(r)).flatMap(longFunctions);
  expect(long.length, `functions over ${LONG} lines:\n  ${long.join('\n  ')}\n`).toBeLessThanOrEqual(MOST);
});
