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

/**
 * A directory a setting names that cannot be made or written (a file in its way, no permission, a
 * read-only disk) as the one line of a bad value, exit 1; any other error as it came. `option` is
 * the setting as the operator gave it (optionSource).
 */
export function unusableDirectory(err: unknown, option: string, dir: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const inTheWay = 'a file is in the way of this directory; remove it, or set a directory';
  const denied = 'no permission to create or write it; give this user the directory, or set another';
  const why: Record<string, string> = {
    ENOTDIR: inTheWay,
    EEXIST: inTheWay,
    EACCES: denied,
    EPERM: denied,
    EROFS: 'it is on a read-only file system; set a writable directory',
    // mkdir under /proc or /sys: the parent is there, but that file system makes no directories.
    ENOENT: 'no directory can be created there (a file system such as /proc or /sys); set a directory on a disk',
  };
  if (!code || !why[code]) return err;
  return new StartupError(`${option} = ${dir}: ${why[code]} (${code})`, StartupExit.config);
}
