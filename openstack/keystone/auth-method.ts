import type { AuthMethod } from './types.js';
import { CyborgError } from '../../errors/index.js';

/** keystoneauth's plugin options as the configuration spells them (`[keystone_authtoken]`, `[placement]`, `[nova]`). */
export interface KeystoneAuthOptions {
  authType: 'password' | 'v3applicationcredential';
  username?: string;
  password?: string;
  projectName?: string;
  userDomainName: string;
  projectDomainName: string;
  applicationCredentialId?: string;
  applicationCredentialName?: string;
  applicationCredentialSecret?: string;
}

/** The AuthMethod for a section's options; throws naming the section when something is missing. */
export function authMethod(section: string, o: KeystoneAuthOptions): AuthMethod {
  if (o.authType === 'v3applicationcredential') {
    if (!o.applicationCredentialSecret || !(o.applicationCredentialId || o.applicationCredentialName)) {
      throw new CyborgError(
        'config.invalid',
        `[${section}] auth_type = v3applicationcredential needs application_credential_secret and its id (or name and username)`,
      );
    }
    return {
      type: 'application_credential',
      id: o.applicationCredentialId,
      name: o.applicationCredentialName,
      secret: o.applicationCredentialSecret,
      username: o.username,
      userDomainName: o.userDomainName,
    };
  }
  if (!o.username || o.password === undefined) throw new CyborgError('config.invalid', `[${section}] auth_type = password needs username and password`);
  return {
    type: 'password',
    username: o.username,
    password: o.password,
    userDomainName: o.userDomainName,
    ...(o.projectName ? { projectName: o.projectName, projectDomainName: o.projectDomainName } : {}),
  };
}
