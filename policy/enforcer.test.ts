import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Credentials } from './checks.js';
import { CYBORG_RULES } from './cyborg-rules.js';
import { Enforcer, PolicyFileError, type RuleDefault } from './enforcer.js';

const reader: Credentials = { roles: ['reader'], project_id: 'p1', user_id: 'r1' };
const member: Credentials = { roles: ['member', 'reader'], project_id: 'p1', user_id: 'm1' };
const admin: Credentials = { roles: ['admin', 'manager', 'member', 'reader'], project_id: 'p1', user_id: 'a1', is_admin: true };
const systemAdmin: Credentials = { roles: ['admin'], system_scope: 'all', user_id: 's1', is_admin: true };
const own = (c: Credentials) => ({ project_id: c.project_id, user_id: c.user_id });

function policyFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'policy-')), 'policy.yaml');
  writeFileSync(file, text);
  return file;
}

describe('Enforcer', () => {
  const defaults = { enforceNewDefaults: false, enforceScope: true };

  it("applies Cyborg's defaults, OR-ing the deprecated rule until enforce_new_defaults", () => {
    const legacy = new Enforcer(CYBORG_RULES, defaults);
    const strict = new Enforcer(CYBORG_RULES, { ...defaults, enforceNewDefaults: true });
    const noRoles: Credentials = { roles: [], project_id: 'p1', user_id: 'n1' };
    expect(legacy.enforce('cyborg:device_profile:get_all', own(noRoles), noRoles)).toBe(true);
    expect(strict.enforce('cyborg:device_profile:get_all', own(noRoles), noRoles)).toBe(false);
    expect(strict.enforce('cyborg:device_profile:get_all', own(reader), reader)).toBe(true);
    expect(legacy.enforce('cyborg:device:get_all', own(member), member)).toBe(false);
    // The fleet is the operator's: a project's reader reads its project's part (api/scope.ts), a system reader all of it.
    expect(legacy.enforce('cyborg:operator:accelerator:get', own(reader), reader)).toBe(false);
    expect(legacy.enforce('cyborg:operator:event:snapshot', own(reader), reader)).toBe(true);
    const systemReader: Credentials = { roles: ['reader'], system_scope: 'all', user_id: 'sr1' };
    expect(legacy.enforce('cyborg:operator:accelerator:get', {}, systemReader)).toBe(true);
    expect(legacy.enforce('cyborg:operator:scope:fleet', {}, systemReader)).toBe(true);
    expect(legacy.enforce('cyborg:operator:scope:fleet', own(admin), admin)).toBe(true);
    // A service token is no role of the caller (Cyborg 2026.2): a reader holding one is still a reader.
    const readerWithServiceToken: Credentials = { ...reader, service_roles: ['service'] };
    expect(legacy.enforce('cyborg:arq:create', own(readerWithServiceToken), readerWithServiceToken)).toBe(false);
    expect(strict.enforce('cyborg:arq:update', own(readerWithServiceToken), readerWithServiceToken)).toBe(false);
    expect(legacy.enforce('cyborg:operator:accelerator:enable', own(reader), reader)).toBe(false);
    expect(legacy.enforce('cyborg:operator:accelerator:enable', own(admin), admin)).toBe(true);
  });

  it('enforce_scope refuses a token of a scope the rule does not declare', () => {
    const scoped = new Enforcer(CYBORG_RULES, defaults);
    expect(scoped.decide('cyborg:device:enable', {}, systemAdmin)).toEqual({ ok: false, reason: 'scope' });
    expect(scoped.enforce('cyborg:operator:accelerator:enable', {}, systemAdmin)).toBe(true);
    const lax = new Enforcer(CYBORG_RULES, { ...defaults, enforceScope: false });
    expect(lax.enforce('cyborg:device:enable', {}, systemAdmin)).toBe(true);
  });

  it('an override from policy.yaml replaces the default, deprecated rule and all', () => {
    const file = policyFile(
      [
        '# the operator lets project members enable accelerators of their own project',
        '"cyborg:operator:accelerator:enable": "role:member and project_id:%(project_id)s"',
        '"cyborg:device_profile:get_all": "rule:admin_api"',
        'my_custom: "role:auditor"',
        '"cyborg:operator:event:stream": "rule:my_custom or rule:operator_reader_api"',
      ].join('\n'),
    );
    const e = new Enforcer(CYBORG_RULES, { ...defaults, policyFile: file });
    expect(e.enforce('cyborg:operator:accelerator:enable', own(member), member)).toBe(true);
    expect(e.enforce('cyborg:operator:accelerator:enable', { project_id: 'p2' }, member)).toBe(false);
    expect(e.enforce('cyborg:device_profile:get_all', own(member), member)).toBe(false);
    expect(e.enforce('cyborg:operator:event:stream', {}, { roles: ['auditor'] })).toBe(true);
    const listed = Object.fromEntries(e.effective().map((r) => [r.name, r]));
    expect(listed['cyborg:operator:accelerator:enable']).toMatchObject({ source: 'file', check: 'role:member and project_id:%(project_id)s' });
    expect(listed['my_custom']).toMatchObject({ source: 'file only' });
    expect(listed['cyborg:arq:get_all']).toMatchObject({ source: 'default or deprecated' });
  });

  it('a bad file stops the load naming the rule; reload keeps the rules in force', () => {
    const good = policyFile('"cyborg:operator:accelerator:get": "role:admin"\n');
    const e = new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good });
    expect(e.enforce('cyborg:operator:accelerator:get', {}, reader)).toBe(false);

    writeFileSync(good, '"cyborg:operator:accelerator:get": "role:reader or"\n');
    const err = e.reload();
    expect(err).toBeInstanceOf(PolicyFileError);
    expect(err!.rule).toBe('cyborg:operator:accelerator:get');
    expect(e.enforce('cyborg:operator:accelerator:get', {}, reader)).toBe(false);

    expect(() => new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good })).toThrow(/cyborg:operator:accelerator:get/);
    writeFileSync(good, '"cyborg:operator:accelerator:get": "rule:does_not_exist"\n');
    expect(() => new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good })).toThrow(/undefined rule "does_not_exist"/);
    writeFileSync(good, 'a: "rule:b"\nb: "rule:a"\n');
    expect(() => new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good })).toThrow(/refers to itself/);
    writeFileSync(good, 'a: [1, 2]\n');
    expect(() => new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good })).toThrow(/"a" must be a string/);
    writeFileSync(good, 'a: "@"\n  b: : :\n');
    expect(() => new Enforcer(CYBORG_RULES, { ...defaults, policyFile: good })).toThrow(/not valid YAML/);

    writeFileSync(good, '"cyborg:operator:accelerator:get": "role:reader"\n');
    expect(e.reload()).toBeUndefined();
    expect(e.enforce('cyborg:operator:accelerator:get', {}, reader)).toBe(true);
  });

  it('a missing policy file means the defaults, as in oslo.policy', () => {
    const e = new Enforcer(CYBORG_RULES, { ...defaults, policyFile: '/nonexistent/policy.yaml' });
    expect(e.effective().every((r) => r.source !== 'file')).toBe(true);
  });

  it('an unregistered rule is a programming error, not a denial', () => {
    const e = new Enforcer([{ name: 'x', check: '@', description: 'x' } satisfies RuleDefault], defaults);
    expect(() => e.enforce('y', {}, reader)).toThrow(/not registered/);
  });
});
