import type { Logger } from 'pino';
import type { Recovered } from '../actors/runtime/index.js';
import type { Config } from '../config/index.js';
import { openJournal } from '../db/index.js';
import { AdoptError } from './errors.js';
import { planAdoption, type Plan } from './plan.js';
import { readCyborg, type CyborgData } from './read.js';
import { openSource } from './source.js';
import { tallyLines, totals } from './tally.js';

export interface AdoptOptions {
  /** The Cyborg database: `mysql+pymysql://…` or `postgresql://…`. */
  from: string;
  dryRun: boolean;
}

export interface AdoptOutcome {
  plan: Plan;
  /** What to print: a line per kind and per skipped row, then the verdict. */
  lines: string[];
  written: boolean;
}

/** Reads the whole source in one read-only snapshot, then lets it go: the source is never held while we write. */
export async function readSource(url: string): Promise<{ data: CyborgData; name: string }> {
  const source = await openSource(url);
  try {
    return { data: await readCyborg(source), name: source.name };
  } finally {
    await source.close();
  }
}

/**
 * `cyborg adopt`: reads the Cyborg database, plans against what our database holds, and (unless
 * a dry run) writes the whole plan as one journal commit — one transaction: a run killed at any
 * point leaves all of it or none, and the next run finds what is there and writes the rest.
 */
export async function adopt(config: Config, log: Logger, opts: AdoptOptions): Promise<AdoptOutcome> {
  const { data, name } = await readSource(opts.from);
  const journal = await openJournal(config, log);
  try {
    const target: Recovered = await journal.load();
    const plan = await planAdoption(data, target, name);
    const t = totals(plan.tally);
    const lines = tallyLines(plan.tally, opts.dryRun);
    const rel = `Cyborg schema ${data.revision.revision}, ${data.revision.release}`;
    if (opts.dryRun) {
      lines.push(
        t.imported === 0
          ? `verdict: nothing to adopt from ${name} (${rel}): ${t.already} rows already adopted, ${t.skipped} skipped`
          : `verdict: adoptable: ${t.imported} rows of ${plan.hosts.length} hosts would be imported from ${name} (${rel}), ${t.already} already adopted, ${t.skipped} skipped`,
      );
      return { plan, lines, written: false };
    }
    if (plan.changes.length > 0) await journal.commit(plan.changes);
    log.info({ source: name, revision: data.revision.revision, hosts: plan.hosts, ...t }, 'adopted from OpenStack Cyborg');
    lines.push(
      t.imported === 0
        ? `verdict: nothing to adopt from ${name} (${rel}): ${t.already} rows already adopted, ${t.skipped} skipped`
        : `verdict: adopted ${t.imported} rows of ${plan.hosts.length} hosts from ${name} (${rel}), ${t.already} already adopted, ${t.skipped} skipped`,
    );
    return { plan, lines, written: plan.changes.length > 0 };
  } finally {
    await journal.close();
  }
}

/** The verdict line of a dry run that cannot adopt. */
export function refusedVerdict(err: AdoptError): string {
  return `verdict: not adoptable (exit ${err.exitStatus}): ${err.message}`;
}
