import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What is not the project's own text, or is made by a run: dependencies, builds, recorded fixtures, test output, local state. */
const SKIP = new Set(['node_modules', 'dist', 'build', 'fixtures', 'test-results', 'coverage', '.git', '.cyborg']);
/** Paths that look like the repository's but are not: sysfs (`<sysfs_root>/bus/pci/…`), and what a build makes (`ui/dist/`). */
const NOT_OURS = [/^bus\/pci\//, /^ui\/dist\//];

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|tsx|js|mjs|md|service|conf|sh|template)$/.test(name) || name === 'Containerfile') out.push(path);
  }
  return out;
}

const TOP = readdirSync(ROOT).filter((n) => !n.startsWith('.') && !SKIP.has(n) && statSync(join(ROOT, n)).isDirectory());
/** A repository path: a top-level folder, then a file with an extension, or a folder ending in `/`. */
const PATH = new RegExp(`(?<![\\w./-])((?:${TOP.join('|')})/[\\w./-]*(?:\\.\\w+|/))(?![\\w/-])`, 'g');

interface Citation {
  where: string;
  path: string;
}

/** Every path the docs (links and `code` spans) and the comments of the code cite. */
function citations(): Citation[] {
  const out: Citation[] = [];
  for (const file of walk(ROOT)) {
    const rel = relative(ROOT, file);
    if (rel === 'docs/paths.test.ts') continue;
    const md = file.endsWith('.md');
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const where = `${rel}:${i + 1}`;
        if (md) {
          for (const [, target] of line.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
            if (!/^[a-z]+:/.test(target!)) out.push({ where, path: relative(ROOT, join(dirname(file), target!)) });
          }
          for (const [, code] of line.matchAll(/`([^`]+)`/g)) for (const m of code!.matchAll(PATH)) out.push({ where, path: m[1]! });
        } else {
          const comment = /^\s*(\/\/|\*|\/\*|#)/.test(line) ? line : line.includes('// ') ? line.slice(line.indexOf('// ')) : '';
          for (const m of comment.matchAll(PATH)) out.push({ where, path: m[1]! });
        }
      });
  }
  return out.filter((c) => !/[<>*{}$]/.test(c.path) && !NOT_OURS.some((r) => r.test(c.path)));
}

describe('docs that cannot drift', () => {
  it("every path and docs/ link that README, docs/ and the code's comments cite exists", () => {
    const cited = citations();
    expect(cited.length).toBeGreaterThan(200);
    expect(cited.filter((c) => !existsSync(join(ROOT, c.path))).map((c) => `${c.where}: ${c.path}`)).toEqual([]);
  });
});
