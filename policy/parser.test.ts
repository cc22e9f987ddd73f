import { describe, expect, it } from 'vitest';
import { evaluate, type Check, type Credentials } from './checks.js';
import { formatCheck, parseRule, PolicySyntaxError } from './parser.js';

const member: Credentials = { roles: ['member', 'reader'], project_id: 'p1', user_id: 'u1', is_admin: false, service_roles: [] };
const admin: Credentials = { roles: ['admin', 'member', 'reader'], project_id: 'p1', user_id: 'a1', is_admin: true, service_roles: [] };
const rules = new Map<string, Check>([['admin_api', parseRule('admin_api', 'role:admin')]]);
const ok = (text: string, creds: Credentials, target: Record<string, unknown> = { project_id: 'p1', user_id: 'u1' }): boolean =>
  evaluate(parseRule('t', text), target, creds, (n) => rules.get(n));

describe('oslo.policy rule language', () => {
  it('@ always passes, ! never, an empty rule passes', () => {
    expect(ok('@', member)).toBe(true);
    expect(ok('!', admin)).toBe(false);
    expect(ok('', member)).toBe(true);
    expect(ok('   ', member)).toBe(true);
  });

  it('role: compares case-insensitively and may be interpolated', () => {
    expect(ok('role:Member', member)).toBe(true);
    expect(ok('role:admin', member)).toBe(false);
    expect(ok('role:%(want)s', member, { want: 'reader' })).toBe(true);
    expect(ok('role:%(missing)s', member, {})).toBe(false);
  });

  it('rule: refers to another rule; an unknown one fails', () => {
    expect(ok('rule:admin_api', admin)).toBe(true);
    expect(ok('rule:admin_api', member)).toBe(false);
    expect(ok('rule:nope', admin)).toBe(false);
  });

  it('project_id / user_id against the target; a missing target key fails', () => {
    expect(ok('project_id:%(project_id)s', member)).toBe(true);
    expect(ok('project_id:%(project_id)s', member, { project_id: 'p2' })).toBe(false);
    expect(ok('user_id:%(user_id)s', member)).toBe(true);
    expect(ok('project_id:%(project_id)s', member, {})).toBe(false);
  });

  it('is_admin:True reads a boolean credential as Python prints it', () => {
    expect(ok('is_admin:True', admin)).toBe(true);
    expect(ok('is_admin:True', member)).toBe(false);
    expect(ok('is_admin:False', member)).toBe(true);
  });

  it('generic checks: paths into credentials, lists match any element, literals on the left', () => {
    const creds: Credentials = { ...member, token: { project: { domain: { id: 'default' } } }, service_roles: ['service'] };
    expect(ok('token.project.domain.id:default', creds)).toBe(true);
    expect(ok('token.project.domain.id:other', creds)).toBe(false);
    expect(ok('service_roles:service', creds)).toBe(true);
    expect(ok("'p1':%(project_id)s", member)).toBe(true);
    expect(ok('"p2":%(project_id)s', member)).toBe(false);
    expect(ok('True:%(flag)s', member, { flag: true })).toBe(true);
    expect(ok('42:%(n)s', member, { n: 42 })).toBe(true);
    expect(ok('domain_id:100%%', { ...member, domain_id: '100%' })).toBe(true);
  });

  it('not binds tighter than and, and tighter than or; parentheses group', () => {
    expect(ok('role:admin or role:member and role:reader', member)).toBe(true);
    expect(ok('role:admin or role:member and not role:reader', member)).toBe(false);
    expect(ok('(role:admin or role:member) and not role:reader', member)).toBe(false);
    expect(ok('not (role:admin or role:nobody)', member)).toBe(true);
    expect(ok('((role:member))', member)).toBe(true);
    expect(ok('not not role:member', member)).toBe(true);
    expect(ok('role:member AND role:reader Or !', member)).toBe(true);
    expect(formatCheck(parseRule('t', 'role:a or role:b and not role:c'))).toBe('role:a or (role:b and not role:c)');
  });

  it('a rule that does not parse names the rule', () => {
    for (const bad of ['role:a and', 'or role:a', '(role:a', 'role:a)', 'role:a role:b', 'nocolon', 'not', 'rule:', 'http://example/check']) {
      let err: unknown;
      try {
        parseRule('cyborg:arq:create', bad);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(PolicySyntaxError);
      expect((err as PolicySyntaxError).rule).toBe('cyborg:arq:create');
      expect((err as Error).message).toContain('cyborg:arq:create');
    }
  });
});
