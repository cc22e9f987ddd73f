import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeviceT } from '../../model/index.js';
import { lspciOf } from './lspci.js';

/**
 * Where OpenStack Cyborg's driver code comes from and how it runs: the files the suite needs, at
 * the tags TAG (16.0.1) and OLD_TAG (10.0.0), are kept verbatim under ./cyborg/<tag>/ with
 * Cyborg's Apache-2.0 LICENSE (./cyborg/README.md names the commits), so CI compares against
 * them on every run; a clone named by CYBORG_SOURCE (with CYBORG_TAG / CYBORG_OLD_TAG) replaces
 * them, for another release. Run by the system's python3 with the stand-ins of ./standins for
 * the oslo libraries, privsep and Cyborg's versioned objects.
 */
export const SOURCE = process.env.CYBORG_SOURCE;
export const TAG = process.env.CYBORG_TAG ?? '16.0.1';
/** The last release with the older NVIDIA names (`CUSTOM_GPU_NVIDIA`, `CUSTOM_GPU_PRODUCT_ID_<PID>`). */
export const OLD_TAG = process.env.CYBORG_OLD_TAG ?? '10.0.0';
const HERE = dirname(fileURLToPath(import.meta.url));
const VENDORED = join(HERE, 'cyborg');

const python = spawnSync('python3', ['--version']).status === 0;
const gitDir = SOURCE ? (existsSync(join(SOURCE, '.git')) ? join(SOURCE, '.git') : SOURCE) : undefined;

/** Why the suite cannot run here, or undefined. */
export const skipReason = !python
  ? "no python3 to run Cyborg's driver code"
  : !SOURCE && !existsSync(join(VENDORED, TAG))
    ? `no Cyborg source for ${TAG}: set CYBORG_SOURCE to a clone of openstack/cyborg (only ${readdirSync(VENDORED)
        .filter((d) => /^\d/.test(d))
        .join(', ')} are kept here)`
    : undefined;

/** One of Cyborg's files at `tag`: from the clone when CYBORG_SOURCE names one, else the copy kept here. */
function cyborgFile(tag: string, file: string): Buffer {
  if (gitDir) return execFileSync('git', [`--git-dir=${gitDir}`, 'show', `${tag}:${file}`]);
  const kept = join(VENDORED, tag, file);
  if (!existsSync(kept)) throw new Error(`${file} of Cyborg ${tag} is not kept under ${VENDORED}: set CYBORG_SOURCE to a clone of openstack/cyborg`);
  return readFileSync(kept);
}

/** Cyborg's files at TAG under the stand-ins, in a fresh directory: PYTHONPATH for `runCyborg`. */
export function cyborgTree(files: readonly string[], tag = TAG): string {
  const tree = mkdtempSync(join(tmpdir(), 'cyborg-conformance-'));
  cpSync(join(HERE, 'standins'), tree, { recursive: true });
  for (const f of ['cyborg/accelerator/common/utils.py', 'cyborg/common/constants.py', ...files]) {
    mkdirSync(dirname(join(tree, f)), { recursive: true });
    writeFileSync(join(tree, f), cyborgFile(tag, f));
  }
  return tree;
}

export type CyborgResult = { ok: true; devices: DeviceT[] } | { ok: false; error: string };

/** Runs `module.func(...args)` of Cyborg's code on the sysfs tree `root` with `conf` (cyborg.conf as JSON). */
export async function runCyborg(tree: string, root: string, conf: object, module: string, func: string, ...args: string[]): Promise<CyborgResult> {
  const lspci = join(mkdtempSync(join(tmpdir(), 'lspci-')), 'out');
  writeFileSync(lspci, await lspciOf(root));
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
  return JSON.parse(out.toString()) as CyborgResult;
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
