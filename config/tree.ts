/** The plain trees the loader builds from each source before the schema fills and checks them. */
export type Tree = Record<string, unknown>;

export function set(tree: Tree, path: string, value: unknown): void {
  const keys = path.split('.');
  let t = tree;
  for (const k of keys.slice(0, -1)) t = (t[k] ??= {}) as Tree;
  t[keys.at(-1)!] = value;
}

function defined<T extends Tree>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' ? merge(b as Tree, defined(v as Tree)) : v;
  }
  return out;
}

export function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object') {
    for (const v of Object.values(obj)) deepFreeze(v);
    Object.freeze(obj);
  }
  return obj;
}
