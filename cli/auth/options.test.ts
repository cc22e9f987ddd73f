import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { apiRoot } from './connect.js';
import { ClientConfigError } from './errors.js';
import { planAuth } from './options.js';

const home = mkdtempSync(join(tmpdir(), 'cyborg-clouds-'));
const cwd = join(home, 'here');
mkdirSync(join(home, '.config/openstack'), { recursive: true });
mkdirSync(cwd);
const ctx = { cwd, home, env: {} };
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("the openstack CLI's ways to say who one is", () => {
  it('nothing given is noauth, as the CLI always worked', () => {
    expect(planAuth({}, ctx)).toEqual({ kind: 'none' });
    expect(planAuth({ auth_type: 'none', username: 'x' }, ctx)).toEqual({ kind: 'none' });
  });

  it('a cloud from ~/.config/openstack/clouds.yaml, its secret merged from secure.yaml, the variables over both', () => {
    writeFileSync(
      join(home, '.config/openstack/clouds.yaml'),
      [
        'clouds:',
        '  prod:',
        '    auth:',
        '      auth-url: https://keystone.example/v3',
        '      username: alice',
        '      project_name: ops',
        '    region_name: East',
        '    interface: internalURL',
      ].join('\n'),
    );
    writeFileSync(join(home, '.config/openstack/secure.yaml'), 'clouds:\n  prod:\n    auth:\n      password: s3cret\n');
    expect(planAuth({ cloud: 'prod' }, ctx)).toEqual({
      kind: 'keystone',
      authUrl: 'https://keystone.example/v3',
      region: 'East',
      interface: 'internal',
      cloud: 'prod',
      auth: { type: 'password', username: 'alice', password: 's3cret', userDomainName: 'Default', projectName: 'ops', projectDomainName: 'Default' },
    });
    const over = planAuth({ cloud: 'prod', project_name: 'other', region_name: 'West' }, ctx);
    expect(over).toMatchObject({ region: 'West', auth: { projectName: 'other', password: 's3cret' } });
  });

  it('./clouds.yaml comes before the one in the home directory', () => {
    writeFileSync(
      join(cwd, 'clouds.yaml'),
      'clouds:\n  local:\n    auth:\n      auth_url: http://k/v3\n      application_credential_id: abc\n      application_credential_secret: xyz\n',
    );
    expect(planAuth({ cloud: 'local' }, ctx)).toMatchObject({ kind: 'keystone', auth: { type: 'application_credential', id: 'abc', secret: 'xyz' } });
    expect(() => planAuth({ cloud: 'staging' }, ctx)).toThrow(
      /cloud "staging" was not found in .*here\/clouds\.yaml \+ .*secure\.yaml \(clouds there: local, prod\)/,
    );
    rmSync(join(cwd, 'clouds.yaml'));
  });

  it('a token: exchanged with Keystone where there is an auth URL, sent as it is where there is none', () => {
    expect(planAuth({ token: 't0k', auth_url: 'http://k/v3', project_name: 'demo' }, ctx)).toMatchObject({
      kind: 'keystone',
      auth: { type: 'token', token: 't0k', projectName: 'demo' },
    });
    expect(planAuth({ token: 't0k' }, ctx)).toEqual({ kind: 'token', token: 't0k' });
  });

  it('says what is missing, naming where to set it', () => {
    expect(() => planAuth({ username: 'bob' }, ctx)).toThrow(ClientConfigError);
    expect(() => planAuth({ username: 'bob' }, ctx)).toThrow(/no Keystone URL .* OS_AUTH_URL/);
    expect(() => planAuth({ auth_url: 'http://k/v3', username: 'bob' }, ctx)).toThrow('no password for user bob: set OS_PASSWORD');
    expect(() => planAuth({ auth_url: 'http://k/v3', auth_type: 'v3applicationcredential', application_credential_id: 'x' }, ctx)).toThrow(/needs its secret/);
    expect(() => planAuth({ auth_url: 'http://k/v3', auth_type: 'saml2' }, ctx)).toThrow(/auth type "saml2" is not one this CLI speaks/);
  });

  it('the catalog names the v2 endpoint; the operator API is at its root', () => {
    expect(apiRoot('http://controller:6666/v2')).toBe('http://controller:6666');
    expect(apiRoot('https://cloud.example/accelerator/v2/')).toBe('https://cloud.example/accelerator');
  });
});
