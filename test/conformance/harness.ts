import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeviceT } from '../../model/index.js';
import { lspciOf } from './lspci.js';

/**
 * Where OpenStack Cyborg's driver code comes from: a clone named by CYBORG_SOURCE (a checkout or a
 * bare git directory of openstack/cyborg), its files at the tags TAG (16.0.1) and OLD_TAG (10.0.0)
 * (CYBORG_TAG / CYBORG_OLD_TAG for others), run by the system's python3 with the stand-ins of
 * ./standins for the oslo libraries, privsep and Cyborg's versioned objects. Without a clone the
 * suite compares against what Cyborg's drivers printed on each fixture, recorded under
 * ./recorded/<tag>/ as JSON naming the Cyborg commit (CYBORG_RECORD=1 with CYBORG_SOURCE writes
 * them): no file of Cyborg's is kept here, and CI still catches a regression in our drivers.
 */
export const SOURCE = process.env.CYBORG_SOURCE;
export const TAG = process.env.CYBORG_TAG ?? '16.0.1';
/** The last release with the older NVIDIA names (`CUSTOM_GPU_NVIDIA`, `CUSTOM_GPU_PRODUCT_ID_<PID>`). */
export const OLD_TAG = process.env.CYBORG_OLD_TAG ?? '10.0.0';
const HERE = dirname(fileURLToPath(import.meta.url));
const RECORDED = join(HERE, 'recorded');
const RECORD = process.env.CYBORG_RECORD === '1';

const python = spawnSync('python3', ['--version']).status === 0;
const gitDir = SOURCE ? (existsSync(join(SOURCE, '.git')) ? join(SOURCE, '.git') : SOURCE) : undefined;

/** Why the suite cannot run here, or undefined. */
export const skipReason = SOURCE
  ? python
    ? undefined
    : "no python3 to run Cyborg's driver code"
  : !existsSync(join(RECORDED, TAG))
    ? `no Cyborg source for ${TAG} and no recording of it: set CYBORG_SOURCE to a clone of openstack/cyborg`
    : undefined;

/** Cyborg's files at `tag` under the stand-ins, in a fresh directory (PYTHONPATH for `runCyborg`); `tag` alone without a clone. */
export function cyborgTree(files: readonly string[], tag = TAG): string {
  if (!gitDir) return `recorded:${tag}`;
  const tree = mkdtempSync(join(tmpdir(), 'cyborg-conformance-'));
  cpSync(join(HERE, 'standins'), tree, { recursive: true });
  for (const f of ['cyborg/accelerator/common/utils.py', 'cyborg/common/constants.py', ...files]) {
    mkdirSync(dirname(join(tree, f)), { recursive: true });
    writeFileSync(join(tree, f), execFileSync('git', [`--git-dir=${gitDir}`, 'show', `${tag}:${f}`]));
  }
  writeFileSync(join(tree, '.tag'), tag);
  return tree;
}

export type CyborgResult = { ok: true; devices: DeviceT[] } | { ok: false; error: string };

/** A recording's name: what was run, on which fixture (its lspci and sysfs listing), with which conf. */
function recordingKey(module: string, func: string, args: string[], conf: object, lspci: string, root: string): string {
  const listing = execFileSync('find', ['.', '-printf', '%p %s\\n'], { cwd: root }).toString().split('\n').sort().join('\n');
  const h = createHash('sha256').update(JSON.stringify({ module, func, args, conf, lspci, listing })).digest('hex').slice(0, 16);
  return `${module.split('.').slice(-2).join('.')}.${func}-${h}.json`;
}

/** Runs `module.func(...args)` of Cyborg's code on the sysfs tree `root` with `conf` (cyborg.conf as JSON), or reads what it printed there. */
export async function runCyborg(tree: string, root: string, conf: object, module: string, func: string, ...args: string[]): Promise<CyborgResult> {
  const lspciText = await lspciOf(root);
  const tag = tree.startsWith('recorded:') ? tree.slice('recorded:'.length) : readFileSync(join(tree, '.tag'), 'utf8');
  const file = join(RECORDED, tag, recordingKey(module, func, args, conf, lspciText, root));
  if (!gitDir) {
    if (!existsSync(file)) throw new Error(`no recording ${file}: run the suite once with CYBORG_SOURCE=<a clone of openstack/cyborg> CYBORG_RECORD=1`);
    return (JSON.parse(readFileSync(file, 'utf8')) as { result: CyborgResult }).result;
  }
  const lspci = join(mkdtempSync(join(tmpdir(), 'lspci-')), 'out');
  writeFileSync(lspci, lspciText);
  const out = execFileSync('python3', [join(HERE, 'run_cyborg.py'), module, func, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PYTHONPATH: tree,
      CONFORMANCE_SYSFS: root,
      CONFORMANCE_LSPCI: lspci,
      CONFORMANCE_CONF: JSON.stringify({ host: 'compute1', ...conf }),
    },
  });
  const result = JSON.parse(out.toString()) as CyborgResult;
  if (RECORD) {
    const commit = execFileSync('git', [`--git-dir=${gitDir}`, 'rev-parse', `${tag}^{commit}`])
      .toString()
      .trim();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ cyborg: { repository: 'openstack/cyborg', tag, commit }, module, func, args, conf, result }, null, 1)}\n`);
  }
  return result;
}

/** The facts compared, deployable by deployable: name (so the provider's uuid3), class and count, traits, handles (physnet included), control path, board info. */
export function facts(devices: Omit<DeviceT, 'uuid' | 'stub' | 'driver'>[]): { key: string; value: unknown }[] {
  return devices
    .flatMap((d) =>
      d.deployables.map((dep) => ({
        key: dep.name,
        value: {
          type: d.type,
          vendor: d.vendor,
          controlPath: d.controlPath.info,
          stdBoardInfo: JSON.parse(d.stdBoardInfo) as unknown,
          vendorBoardInfo: parseOr(d.vendorBoardInfo),
          driverName: dep.driverName,
          numAccelerators: dep.numAccelerators,
          // What Placement gets: the class and the set of traits (attribute keys and order are not
          // compared: Cyborg's Intel FPGA driver numbers a VF's traits from the PF's last index, so
          // two of its attributes share a key; docs/drivers.md lists it).
          rc: dep.attributes.find((a) => a.key === 'rc')?.value ?? null,
          traits: [...new Set(dep.attributes.filter((a) => a.key.startsWith('trait')).map((a) => a.value))].sort(),
          handles: dep.attachHandles.map((h) => `${h.attachType} ${h.attachInfo}`),
        },
      })),
    )
    .sort((a, b) => a.key.localeCompare(b.key));
}

function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
