/** A configuration that cannot run: it names the file, section and option (or variable or flag) at fault. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * The exit statuses of a role that could not start, one per kind of cause (README, "Start-up
 * failures"). Distinct so that a unit or a script can tell a mistake to fix (the configuration,
 * the schema, a file) from a peer that may come back (the database).
 */
export const StartupExit = {
  /** An invalid configuration: a value, a section, a config file or directory, or a file it names (TLS, credentials) that cannot be read. */
  config: 1,
  /** The database does not exist or is not at this code's schema: `cyborg db migrate`. */
  schema: 3,
  /** The database cannot be reached, or refuses the user. */
  database: 4,
  /** A listener cannot bind its address and port (in use, not this machine's). */
  listen: 5,
  /** The embedded data directory is held by another process. */
  locked: 6,
} as const;

/**
 * A role that cannot start, said in one line: the option at fault, the value (secrets masked)
 * and what to do. `main` prints the message alone and exits with `exitStatus`.
 */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly exitStatus: number,
  ) {
    super(message);
    this.name = 'StartupError';
  }
}
