import { ExitCode } from '../output.js';

/**
 * Why the CLI could not sign in, each with the exit code docs/cli.md promises: the client's
 * OpenStack configuration is wrong (8), Keystone refused the credentials (7), or Keystone did
 * not answer (6). The message is the whole story: it is printed as one line.
 */
export class SignInError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'SignInError';
  }
}

/** Unknown cloud, unreadable or malformed clouds.yaml / secure.yaml, missing auth options, no endpoint. */
export class ClientConfigError extends SignInError {
  constructor(message: string) {
    super(message, ExitCode.config);
    this.name = 'ClientConfigError';
  }
}

/** Keystone said no: wrong password, unknown user, no role on the project, a bad token or credential. */
export class CredentialsRefusedError extends SignInError {
  constructor(message: string) {
    super(message, ExitCode.unauthorized);
    this.name = 'CredentialsRefusedError';
  }
}

/** Keystone could not be asked (refused connection, timeout, 5xx). */
export class KeystoneUnreachableError extends SignInError {
  constructor(message: string) {
    super(message, ExitCode.unavailable);
    this.name = 'KeystoneUnreachableError';
  }
}
