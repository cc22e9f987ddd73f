/** A configuration that cannot run: it names the file, section and option (or variable or flag) at fault. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
