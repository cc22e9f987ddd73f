/** What an adoption counts, by kind: Cyborg's tables, as the dry run and the run print them. */
export const KINDS = ['device_profiles', 'devices', 'controlpath_ids', 'deployables', 'attributes', 'attach_handles', 'accelerator_requests'] as const;
export type Kind = (typeof KINDS)[number];

export interface KindCount {
  /** Written by this run (or, in a dry run, that would be). */
  imported: number;
  /** Adopted by an earlier run: left as they are. */
  already: number;
  /** Not adopted, each with why. */
  skipped: { row: string; why: string }[];
}

export type Tally = Record<Kind, KindCount>;

export function emptyTally(): Tally {
  return Object.fromEntries(KINDS.map((k) => [k, { imported: 0, already: 0, skipped: [] }])) as unknown as Tally;
}

/** The lines the dry run and the run print: one per kind, one per skipped row, and the verdict. */
export function tallyLines(t: Tally, dryRun: boolean): string[] {
  const verb = dryRun ? 'would import' : 'imported';
  const out: string[] = [];
  for (const k of KINDS) {
    const c = t[k];
    out.push(`${k}: ${verb} ${c.imported}, already adopted ${c.already}, skipped ${c.skipped.length}`);
    for (const s of c.skipped) out.push(`  skipped ${s.row}: ${s.why}`);
  }
  return out;
}

export function totals(t: Tally): { imported: number; already: number; skipped: number } {
  let imported = 0;
  let already = 0;
  let skipped = 0;
  for (const k of KINDS) {
    imported += t[k].imported;
    already += t[k].already;
    skipped += t[k].skipped.length;
  }
  return { imported, already, skipped };
}
