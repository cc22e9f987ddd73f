/**
 * `npm start`'s build (prestart): the run-time rooms transpiled to JavaScript under build/, so the
 * all-in-one runs as plain `node build/cli/main.js` — no tsx loader in its process and no tsx
 * wrapper process beside it (issue 43: an all-in-one in 256 MB). esbuild transpiles one file at a
 * time (no bundling, no type check: `npm run typecheck` does that; `npm run build` is the
 * packaged, type-checked dist/), so it takes a second or two and is never stale: every start
 * rebuilds what changed. `npm run dev` keeps running the sources under tsx.
 *
 * It also builds the visualizer when it is stale (ui/build.ts), as prestart always did.
 *
 * Two starts at once (a developer's and a test's) write the same bytes: each file is written to a
 * temporary name and renamed over the old one, so neither reads half a file.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import { ensureUiBuilt } from '../ui/build.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BUILD = join(ROOT, 'build');

/**
 * The run-time rooms: every top-level folder but those tsconfig.build.json excludes from dist/
 * (tests, benches, scripts, the visualizer's sources; declared there once) and build outputs.
 */
function rooms(): string[] {
  const text = readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')
    .split('\n')
    .filter((l) => !l.trim().startsWith('//'))
    .join('\n');
  const excluded = new Set([...(JSON.parse(text) as { exclude: string[] }).exclude, 'build']);
  return readdirSync(ROOT).filter((n) => !n.startsWith('.') && !excluded.has(n) && statSync(join(ROOT, n)).isDirectory());
}

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function writeIfChanged(path: string, code: string): void {
  let old: string | undefined;
  try {
    old = readFileSync(path, 'utf8');
  } catch {
    // not built yet
  }
  if (old === code) return;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, path);
}

/** Removes built files whose source is gone (a stale migration would otherwise still be read). */
function prune(dir: string, wanted: Set<string>): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isSymbolicLink()) continue;
    if (st.isDirectory()) prune(path, wanted);
    else if (!wanted.has(path)) rmSync(path, { force: true });
  }
}

export async function buildForStart(): Promise<number> {
  const files = rooms().flatMap((room) => sources(join(ROOT, room)));
  const wanted = new Set<string>();
  await Promise.all(
    files.map(async (file) => {
      const out = join(BUILD, relative(ROOT, file)).replace(/\.ts$/, '.js');
      wanted.add(out);
      const { code } = await transform(readFileSync(file, 'utf8'), { loader: 'ts', format: 'esm', target: 'node22', sourcefile: file });
      writeIfChanged(out, code);
    }),
  );
  prune(BUILD, wanted);
  // api/routes/ui.ts serves ../../ui/dist/ from where it runs: the visualizer ui/build.ts made.
  const ui = join(BUILD, 'ui', 'dist');
  mkdirSync(dirname(ui), { recursive: true });
  if (!lstatSync(ui, { throwIfNoEntry: false }))
    try {
      symlinkSync(relative(dirname(ui), join(ROOT, 'ui', 'dist')), ui);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // the other start made it
    }
  // cli/main.ts reads ../../package.json from build/cli/: the checkout's (it tries ../ first).
  return files.length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await ensureUiBuilt();
  await buildForStart();
}
