import { ConfigError } from './errors.js';

/**
 * Sections where an unknown option is refused, not warned about: a misspelt option there loses
 * something a role cannot run without — `[database] conection = …` left a conductor with its
 * state in memory only, joining the fleet. Every other section warns and goes on, as oslo.config
 * does, since a cyborg.conf written for Cyborg carries options this implementation does not read.
 */
const STRICT_SECTIONS: ReadonlySet<string> = new Set(['database']);

/** Throws for an unknown option of a strict section, naming the file, the option and the nearest known one. */
export function refuseUnknownOption(file: string, section: string, name: string, known: readonly string[]): void {
  if (!STRICT_SECTIONS.has(section)) return;
  const near = known.map((k) => ({ k, d: distance(name.toLowerCase(), k.toLowerCase()) })).sort((a, b) => a.d - b.d)[0];
  const hint = near && near.d <= 3 ? ` (did you mean ${near.k}?)` : ` (options of [${section}]: ${known.join(', ')})`;
  throw new ConfigError(`invalid configuration: ${file} [${section}]: unknown option ${name}${hint}`);
}

/** Levenshtein distance: enough for a typo in a section's or an option's name. */
export function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
