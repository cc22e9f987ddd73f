import type { Recovered } from '../actors/runtime/index.js';
import { AdoptError } from './errors.js';
import { planAdoption } from './plan.js';
import { readSource } from './run.js';
import { totals } from './tally.js';

/** oslo.upgradecheck's codes, as `cyborg status upgrade-check` prints them. */
export type CheckCode = 0 | 1 | 2;

const EMPTY: Recovered = { hosts: [], accelerators: [], arqs: [], documents: [] };

/**
 * Whether the Cyborg database at `url` can be adopted (for `cyborg status upgrade-check`): 0
 * everything would be adopted, 1 some rows would be skipped (the details say how many; the dry
 * run names them), 2 it cannot be adopted (the one line why). Against `target` when given, else
 * an empty database. Reads the source only, in one read-only snapshot.
 *
 * @example const c = await adoptability('mysql+pymysql://cyborg:secret@db/cyborg'); // { code: 0, details: '…' }
 */
export async function adoptability(url: string, target: Recovered = EMPTY): Promise<{ code: CheckCode; details: string }> {
  try {
    const { data, name } = await readSource(url);
    const plan = await planAdoption(data, target, name);
    const t = totals(plan.tally);
    const what = `${name} at Cyborg schema ${data.revision.revision} (${data.revision.release}): ${t.imported} rows of ${plan.hosts.length} hosts adoptable`;
    return t.skipped > 0 ? { code: 1, details: `${what}, ${t.skipped} would be skipped (cyborg adopt --dry-run names them)` } : { code: 0, details: what };
  } catch (err) {
    if (err instanceof AdoptError || (err instanceof Error && 'exitStatus' in err)) return { code: 2, details: (err as Error).message };
    throw err;
  }
}
