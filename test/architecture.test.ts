/**
 * The house rules of imports, checked on every run: which room may import which, and no cycle
 * between folders. dependency-cruiser reads the import graph (type-only imports count: a contract
 * borrowed from the wrong room is still a wrong-way arrow); the rules below are ours.
 *
 * Production code only: tests may reach into any room they test.
 */
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser';
import extractTsConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

/** Violations tolerated, each `rule: from -> to`. Keep it empty: a wrong-way import is fixed, not listed. */
const KNOWN_VIOLATIONS: readonly string[] = [];

const ROOT = resolve(import.meta.dirname, '..');

/** The rooms whose code is checked; test/ and *.test.ts are left out. */
const ROOMS = [
  'actors',
  'adopt',
  'api',
  'bench',
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
  'ui/src',
];

/** The rooms entered only through their index.ts (the actors subrooms and openstack/placement/ have rules of their own). */
const DOORS = '(adopt|bus|config|control|db|drivers|ids|machines|metrics|model)';

/** The ground floor: rooms that every other may import because they import none of ours (taking one loads nothing else). */
const GROUND = '(errors|ids|release)';

const RULES: IForbiddenRuleType[] = [
  {
    name: 'actors-not-into-api',
    comment: 'The conductor implements the control-plane contract; the API depends on it, never the reverse.',
    severity: 'error',
    from: { path: '^actors/' },
    to: { path: '^api/' },
  },
  {
    name: 'control-is-a-protocol',
    comment: 'The api <-> conductor protocol speaks the model; it knows neither the HTTP layer nor actor internals.',
    severity: 'error',
    from: { path: '^control/' },
    to: { path: '^(api|roles|cli)/|^actors/(?![^/]+/index\\.ts$)' },
  },
  {
    name: 'rooms-through-their-index',
    comment: 'One actors subroom reaches another only through its index.ts.',
    severity: 'error',
    from: { path: '^actors/([^/]+)/' },
    to: { path: '^actors/', pathNot: ['^actors/$1/', '^actors/[^/]+/index\\.ts$'] },
  },
  {
    name: 'rooms-through-their-door',
    comment: 'bus/, config/, control/, db/, drivers/, ids/, machines/, metrics/ and model/ are reached from another room only through their index.ts.',
    severity: 'error',
    from: { path: '^([^/]+)/', pathNot: '^test/' },
    to: { path: `^${DOORS}/`, pathNot: ['^$1/', `^${DOORS}/index\\.ts$`] },
  },
  {
    name: 'placement-through-its-door',
    comment: 'openstack/placement/ is reached from anywhere else, its openstack/ siblings included, only through its index.ts.',
    severity: 'error',
    from: { path: '^', pathNot: '^(openstack/placement|test)/' },
    to: { path: '^openstack/placement/', pathNot: '^openstack/placement/index\\.ts$' },
  },
  {
    name: 'auth-through-its-door',
    comment:
      'api/auth/ (who is asking, and what they may do) is one room that api/v2/, api/routes/ and the roles share: they reach it only through its index.ts, so none serves identity or policy to a sibling.',
    severity: 'error',
    from: { path: '^', pathNot: '^(api/auth|test)/' },
    to: { path: '^api/auth/', pathNot: '^api/auth/index\\.ts$' },
  },
  {
    name: 'auth-serves-no-api-surface',
    comment: 'Identity and policy are taken by the API surfaces, never the reverse: api/auth/ imports neither api/v2/ nor api/routes/.',
    severity: 'error',
    from: { path: '^api/auth/' },
    to: { path: '^api/(v2|routes)/' },
  },
  {
    name: 'openstack-through-its-doors',
    comment:
      "Other rooms take openstack/ through its clients' doors (keystone/, placement/, glance/ index.ts), the Nova notifier, and the global request id; never a client's internals.",
    severity: 'error',
    from: { path: '^', pathNot: '^(openstack|test)/' },
    to: { path: '^openstack/', pathNot: '^openstack/((keystone|placement|glance)/index|nova|request-id)\\.ts$' },
  },
  {
    name: 'request-id-loads-nothing',
    comment:
      "openstack/request-id.ts is taken by the actors, control/ and the api to carry OpenStack's global request id: it imports no file of ours, so taking it loads no OpenStack client.",
    severity: 'error',
    from: { path: '^openstack/request-id\\.ts$' },
    to: { dependencyTypes: ['local'] },
  },
  {
    name: 'no-actor-internals',
    comment: "Edges of the system reach actors only through a subroom's public index.ts.",
    severity: 'error',
    from: { path: '^(api|openstack|metrics|cli|ui|db|drivers|bus|control|bench)/' },
    to: { path: '^actors/', pathNot: '^actors/[^/]+/index\\.ts$' },
  },
  {
    name: 'ground-floor-imports-no-room',
    comment: 'errors/ and ids/ are imported from every floor: one that imported a room would load it (and its own imports) into all of them, and close cycles.',
    severity: 'error',
    from: { path: `^${GROUND}/` },
    to: { path: '^[^/]+/', pathNot: ['^$1/', '(^|/)node_modules/'] },
  },
  {
    name: 'model-imports-no-implementation',
    comment: 'The model is the shared contract: it is owned by no implementation room.',
    severity: 'error',
    from: { path: '^model/' },
    to: { path: '^(actors|api|bus|db|control|roles|cli)/' },
  },
  {
    name: 'ui-reads-contracts-only',
    comment:
      'The browser bundle takes the shared contracts (model/, machines/), never a server room: a route, the bus or the database would be bundled or drift.',
    severity: 'error',
    from: { path: '^ui/' },
    to: { path: '^(actors|api|bus|cli|config|control|db|drivers|ids|metrics|openstack|policy|roles)/' },
  },
  {
    name: 'actors-take-options-not-config',
    comment: 'Configuration is read and validated once, by roles/, which build each actor and service from plain options.',
    severity: 'error',
    from: { path: '^actors/' },
    to: { path: '^config/' },
  },
  {
    name: 'db-stores-no-machine',
    comment: "The database stores machine records as data: what it derives from them (Cyborg's ARQ columns) it takes through the model, never from a machine.",
    severity: 'error',
    from: { path: '^db/' },
    to: { path: '^machines/' },
  },
  {
    name: 'machines-stay-pure',
    comment: 'Machines are pure: effects are provided by the hosting actor, not imported.',
    severity: 'error',
    from: { path: '^machines/' },
    to: { path: '^(actors|api|db|bus)/' },
  },
];

interface Edge {
  from: string;
  to: string;
}

async function importGraph(): Promise<{ edges: Edge[]; violations: string[] }> {
  process.chdir(ROOT);
  const result = await cruise(
    ROOMS,
    {
      baseDir: ROOT,
      validate: true,
      ruleSet: { forbidden: RULES },
      exclude: { path: ['\\.test\\.ts$', '(^|/)node_modules/'] },
      doNotFollow: { path: 'node_modules' },
      tsPreCompilationDeps: true,
      tsConfig: { fileName: 'tsconfig.json' },
    },
    {},
    { tsConfig: extractTsConfig(resolve(ROOT, 'tsconfig.json')) },
  );
  const out = result.output as ICruiseResult;
  const edges: Edge[] = [];
  for (const m of out.modules) {
    for (const d of m.dependencies) if (d.dependencyTypes.includes('local') && !d.couldNotResolve) edges.push({ from: m.source, to: d.resolved });
  }
  const violations = out.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  return { edges, violations };
}

/** Strongly connected components of more than one node (Tarjan's algorithm): each is a cycle. */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) cycles.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

function addEdge(graph: Map<string, Set<string>>, from: string, to: string): void {
  if (!graph.has(from)) graph.set(from, new Set());
  graph.get(from)!.add(to);
}

/**
 * Cycles between sibling folders at any depth (top-level rooms, or subrooms of one room): an edge
 * counts between the first folders below the two files' common ancestor. A file that sits directly
 * in that ancestor (a room's index.ts importing its own subroom) is a parent-child arrow, not a sibling one.
 */
function folderCycles(edges: Edge[]): string[] {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const a = from.split('/');
    const b = to.split('/');
    let i = 0;
    while (i < a.length - 1 && i < b.length - 1 && a[i] === b[i]) i++;
    if (i >= a.length - 1 || i >= b.length - 1) continue;
    addEdge(graph, a.slice(0, i + 1).join('/'), b.slice(0, i + 1).join('/'));
  }
  return cyclesOf(graph).map((scc) => `folder-cycle: ${scc.join(' <-> ')}`);
}

/**
 * Cycles between files, inside a room too: a file that imports one that imports it back loads in
 * an order that depends on who was imported first (a door re-exporting a file that takes the door
 * reads `undefined` at load time), and the two are one concern in two files. Type-only imports
 * count, as above: they still tie the two files together.
 */
function fileCycles(edges: Edge[]): string[] {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) addEdge(graph, from, to);
  return cyclesOf(graph).map((scc) => `file-cycle: ${scc.join(' <-> ')}`);
}

it('imports go the right way between rooms, and no folders or files import each other in a cycle', async () => {
  const { edges, violations } = await importGraph();
  expect(edges.length, 'the import graph was read').toBeGreaterThan(100);
  const found = [...violations, ...folderCycles(edges), ...fileCycles(edges)].sort();
  const known = new Set(KNOWN_VIOLATIONS);
  const fresh = found.filter((v) => !known.has(v));
  expect(fresh, `wrong-way imports or folder / file cycles:\n  ${fresh.join('\n  ')}\n`).toEqual([]);
}, 120_000);

it('every door names what it exports: no `export *`', () => {
  // A door that re-exports every file hides what its room promises and lets each new export leak
  // (scripts/door-exports.ts turns one into its list).
  const starred: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'dist') walk(path);
      else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.test.ts') && /^export \* from/m.test(readFileSync(join(ROOT, path), 'utf8'))) starred.push(path);
    }
  };
  for (const room of ROOMS) walk(room);
  expect(starred).toEqual([]);
});
