import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { v3Url, type AuthMethod, type KeystoneToken } from '../../openstack/keystone/index.js';

/**
 * Where the CLI keeps the tokens it signed in for, when the user allows it (`--token-cache`,
 * `CYBORG_TOKEN_CACHE`, or the cloud's `cache: {auth: true}` in clouds.yaml as openstacksdk
 * reads it): `$XDG_CACHE_HOME/cyborg` (`~/.cache/cyborg`), one file per Keystone, user and
 * scope, mode 0600. Each command signed in afresh before: 14–24 s on a loaded machine (issue 42).
 */
export function tokenCacheDir(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'cyborg');
}

/** Who a token is for, in words and as the cache file's key: the Keystone, the credential and the scope (never a secret). */
export interface TokenIdentity {
  authUrl: string;
  who: string;
  scope: string;
}

export function identityOf(authUrl: string, auth: AuthMethod): TokenIdentity {
  const who =
    auth.type === 'password'
      ? `user ${auth.username}@${auth.userDomainId ?? auth.userDomainName ?? 'Default'}`
      : auth.type === 'application_credential'
        ? `application credential ${auth.id ?? `${auth.name} of ${auth.username}`}`
        : 'a token given';
  const a = auth as { projectId?: string; projectName?: string; projectDomainName?: string; projectDomainId?: string; systemScope?: string };
  const scope = a.systemScope
    ? 'system all'
    : a.projectId
      ? `project ${a.projectId}`
      : a.projectName
        ? `project ${a.projectName}@${a.projectDomainId ?? a.projectDomainName ?? 'Default'}`
        : 'unscoped';
  return { authUrl: v3Url(authUrl), who, scope };
}

interface FileBody {
  version: 1;
  authUrl: string;
  who: string;
  scope: string;
  token: string;
  data: KeystoneToken;
}

/**
 * One identity's cached token. A file that is not one this CLI wrote, that others may read, or
 * that is for another cloud is said in one line (`warn`), removed and not used: the command signs
 * in again. Never a stack trace, never a silent fallback.
 */
export class CliTokenCache {
  readonly path: string;

  constructor(
    private readonly id: TokenIdentity,
    private readonly warn: (line: string) => void,
    dir = tokenCacheDir(),
    private readonly now: () => number = Date.now,
  ) {
    const key = createHash('sha256')
      .update(JSON.stringify([id.authUrl, id.who, id.scope]))
      .digest('hex')
      .slice(0, 16);
    this.path = join(dir, `token-${key}.json`);
  }

  /** The kept token, while Keystone still holds it valid; undefined (after one line, if the file was bad) otherwise. */
  load(): { token: string; data: KeystoneToken } | undefined {
    let text: string;
    try {
      const st = statSync(this.path);
      if ((st.mode & 0o077) !== 0 || (typeof process.getuid === 'function' && st.uid !== process.getuid())) {
        return this.refuse(`others may read it (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}, owner uid ${st.uid})`);
      }
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return this.refuse(`it cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    let body: FileBody;
    try {
      body = JSON.parse(text) as FileBody;
    } catch {
      return this.refuse('it is not JSON');
    }
    if (body?.version !== 1 || typeof body.token !== 'string' || typeof body.data?.expiresAt !== 'number' || !Array.isArray(body.data.catalog)) {
      return this.refuse('it is not a token cache this CLI wrote');
    }
    if (body.authUrl !== this.id.authUrl || body.who !== this.id.who || body.scope !== this.id.scope) {
      return this.refuse(
        `it is for another cloud (Keystone ${body.authUrl}, ${body.who}, ${body.scope}), not ${this.id.authUrl}, ${this.id.who}, ${this.id.scope}`,
      );
    }
    if (body.data.expiresAt <= this.now()) {
      this.clear();
      return undefined;
    }
    return { token: body.token, data: body.data };
  }

  /** Keeps a token Keystone issued: written to a file of mode 0600 and renamed into place. */
  save(token: string, data: KeystoneToken): void {
    const body: FileBody = { version: 1, ...this.id, token, data };
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
      const tmp = `${this.path}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(body), { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (err) {
      this.warn(`cannot keep the token in ${this.path} (${(err as NodeJS.ErrnoException).code ?? String(err)}): the next command signs in again`);
    }
  }

  clear(): void {
    rmSync(this.path, { force: true });
  }

  private refuse(why: string): undefined {
    this.warn(`token cache ${this.path} not used: ${why}; removed it, signing in again`);
    try {
      this.clear();
    } catch {
      // Said above; the next save replaces it.
    }
    return undefined;
  }
}

/** `cyborg logout`: every cached token removed; the paths removed. */
export function forgetTokens(dir = tokenCacheDir()): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed = names.filter((n) => /^token-[0-9a-f]+\.json$/.test(n)).map((n) => join(dir, n));
  for (const p of removed) rmSync(p, { force: true });
  return removed;
}
