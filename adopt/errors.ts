import { StartupError, StartupExit } from '../config/index.js';

/**
 * How `cyborg adopt` ends (docs/adopt.md). 1, 3 and 4 are the start-up failures' own (config/
 * errors.ts): a bad setting, a target database not at this code's schema, a database that cannot
 * be reached or refuses the user (the source's as well as the target's: the line says which).
 */
export const AdoptExit = {
  ok: 0,
  config: StartupExit.config,
  targetSchema: StartupExit.schema,
  unreachable: StartupExit.database,
  /** The source is not a Cyborg database we can read: not Cyborg's, or a revision before 9.0.0 or after any known. */
  notAdoptable: 7,
  /** A source row we refuse to store: a NUL, an over-long value, a uuid that is not one, a reference to nothing. */
  badRow: 8,
  /** The target already holds accelerators of a source host that this adoption did not write. */
  conflict: 9,
} as const;

/** One line naming the row or the setting at fault, and the exit status that says which kind. */
export class AdoptError extends StartupError {
  constructor(message: string, exitStatus: (typeof AdoptExit)[keyof typeof AdoptExit]) {
    super(message, exitStatus);
    this.name = 'AdoptError';
  }
}
