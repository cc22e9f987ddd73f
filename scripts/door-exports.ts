// Rewrites each `export * from './x.js'` of the doors named on the command line as the list of
// x's exports, `type` where a name is only a type (verbatimModuleSyntax), so that a door names its
// surface (test/architecture.test.ts refuses `export *`). With NARROW=1 only the names some other
// file imports are kept. `npx tsx scripts/door-exports.ts control/index.ts`
import ts from 'typescript';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve, relative } from 'node:path';
import { execSync } from 'node:child_process';

const ROOT = process.cwd();
const doors = process.argv.slice(2).map((d) => resolve(ROOT, d));
const files = execSync('git ls-files "*.ts" "*.tsx"; git ls-files --others --exclude-standard "*.ts" "*.tsx"', { encoding: 'utf8' })
  .split('\n')
  .filter(Boolean)
  .map((f) => resolve(ROOT, f));

function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  let p = resolve(dirname(from), spec);
  p = p.replace(/\.js$/, '.ts');
  return p;
}

const used = new Map<string, Set<string>>(doors.map((d) => [d, new Set<string>()]));
for (const f of files) {
  const src = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
  for (const st of src.statements) {
    if ((ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
      const target = resolveSpec(f, st.moduleSpecifier.text);
      if (!target || !used.has(target)) continue;
      const set = used.get(target)!;
      if (ts.isImportDeclaration(st)) {
        const nb = st.importClause?.namedBindings;
        if (nb && ts.isNamedImports(nb)) for (const e of nb.elements) set.add((e.propertyName ?? e.name).text);
        else if (nb) throw new Error(`namespace import of ${target} in ${f}`);
      } else if (st.exportClause && ts.isNamedExports(st.exportClause)) {
        for (const e of st.exportClause.elements) set.add((e.propertyName ?? e.name).text);
      } else throw new Error(`export * of ${target} in ${f}`);
    }
  }
}

const config = ts.getParsedCommandLineOfConfigFile(resolve(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
const program = ts.createProgram(config.fileNames, config.options);
const checker = program.getTypeChecker();

for (const door of doors) {
  const text = readFileSync(door, 'utf8');
  const names = used.get(door)!;
  const lines = text.split('\n');
  const out: string[] = [];
  const dropped: string[] = [];
  for (const line of lines) {
    const m = /^export \* from '(\.\/[^']+)';$/.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    const mod = resolveSpec(door, m[1]!)!;
    const sf = program.getSourceFile(mod);
    if (!sf) throw new Error(`no source ${mod}`);
    const sym = checker.getSymbolAtLocation(sf)!;
    const exps = checker.getExportsOfModule(sym);
    const parts: string[] = [];
    for (const e of exps) {
      const name = e.getName();
      if (!names.has(name) && process.env.NARROW) {
        dropped.push(`${m[1]}:${name}`);
        continue;
      }
      const target = e.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(e) : e;
      const isValue = (target.flags & ts.SymbolFlags.Value) !== 0;
      parts.push(isValue ? name : `type ${name}`);
    }
    parts.sort((a, b) => a.replace(/^type /, '').localeCompare(b.replace(/^type /, ''), 'en', { sensitivity: 'base' }) || a.localeCompare(b));
    if (parts.length) out.push(`export { ${parts.join(', ')} } from '${m[1]}';`);
  }
  writeFileSync(door, out.join('\n'));
  console.log(relative(ROOT, door), 'used', names.size, 'dropped', dropped.length);
  if (dropped.length) console.log('  dropped:', dropped.join(' '));
}
