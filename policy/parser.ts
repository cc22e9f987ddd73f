import type { Check } from './checks.js';

/** A rule that does not parse: names the rule and says where it went wrong. */
export class PolicySyntaxError extends Error {
  constructor(
    readonly rule: string,
    readonly text: string,
    reason: string,
  ) {
    super(`policy rule "${rule}": ${reason} in ${JSON.stringify(text)}`);
    this.name = 'PolicySyntaxError';
  }
}

type Token = { t: '(' | ')' | 'and' | 'or' | 'not' } | { t: 'check'; check: Check };

/**
 * `ast.literal_eval` of a check's left side, as oslo.policy's GenericCheck does: a quoted string,
 * a number, True, False or None is a literal compared with the (interpolated) right side.
 */
function literalOf(field: string): string | undefined {
  const q = field[0];
  if (field.length >= 2 && (q === '"' || q === "'") && field.at(-1) === q) return field.slice(1, -1);
  if (field === 'True' || field === 'False' || field === 'None') return field;
  if (/^[+-]?\d+$/.test(field)) return String(Number.parseInt(field, 10));
  if (/^[+-]?(\d+\.\d*|\.\d+)$/.test(field)) return String(Number.parseFloat(field)).replace(/^(-?\d+)$/, '$1.0');
  return undefined;
}

function parseCheck(rule: string, text: string, tok: string): Check {
  if (tok === '@') return { kind: 'true' };
  if (tok === '!') return { kind: 'false' };
  const colon = tok.indexOf(':');
  if (colon <= 0) throw new PolicySyntaxError(rule, text, `"${tok}" is not a check (expected kind:match, @ or !)`);
  const field = tok.slice(0, colon);
  const match = tok.slice(colon + 1);
  if (field === 'rule') {
    if (!match) throw new PolicySyntaxError(rule, text, '"rule:" names no rule');
    return { kind: 'rule', name: match };
  }
  if (field === 'role') return { kind: 'role', match };
  if (field === 'http' || field === 'https') throw new PolicySyntaxError(rule, text, `${field}: checks (a remote policy server) are not supported`);
  const literal = literalOf(field);
  return literal === undefined ? { kind: 'generic', field, match } : { kind: 'generic', field, match, literal };
}

/** oslo.policy's tokenizer: whitespace-separated, with `(` peeled off the front and `)` off the back. */
function tokenize(rule: string, text: string): Token[] {
  const out: Token[] = [];
  for (const raw of text.split(/\s+/)) {
    if (!raw) continue;
    let tok = raw;
    while (tok.startsWith('(')) {
      out.push({ t: '(' });
      tok = tok.slice(1);
    }
    let trail = 0;
    while (tok.endsWith(')')) {
      trail++;
      tok = tok.slice(0, -1);
    }
    if (tok) {
      const lowered = tok.toLowerCase();
      if (lowered === 'and' || lowered === 'or' || lowered === 'not') out.push({ t: lowered });
      else out.push({ t: 'check', check: parseCheck(rule, text, tok) });
    }
    for (let i = 0; i < trail; i++) out.push({ t: ')' });
  }
  return out;
}

/**
 * Parses one rule of oslo.policy's language: checks (`role:x`, `rule:x`, `field:%(key)s`,
 * `'literal':%(key)s`, `@`, `!`) joined by `and`, `or`, `not` and parentheses, with `not`
 * binding tighter than `and`, and `and` tighter than `or`. An empty rule always passes.
 * Unlike oslo.policy (which logs and denies), a rule that does not parse throws.
 */
export function parseRule(rule: string, text: string): Check {
  const tokens = tokenize(rule, text);
  if (tokens.length === 0) return { kind: 'true' };
  let i = 0;
  const peek = (): Token['t'] | undefined => tokens[i]?.t;
  const fail = (why: string): never => {
    throw new PolicySyntaxError(rule, text, why);
  };

  const unary = (): Check => {
    const tok = tokens[i];
    if (!tok) return fail('the rule ends where a check was expected');
    if (tok.t === 'not') {
      i++;
      return { kind: 'not', check: unary() };
    }
    if (tok.t === '(') {
      i++;
      const inner = or();
      if (peek() !== ')') fail('a "(" is not closed');
      i++;
      return inner;
    }
    if (tok.t === 'check') {
      i++;
      return tok.check;
    }
    return fail(`"${tok.t}" where a check was expected`);
  };
  const and = (): Check => {
    const checks = [unary()];
    while (peek() === 'and') {
      i++;
      checks.push(unary());
    }
    return checks.length === 1 ? checks[0]! : { kind: 'and', checks };
  };
  const or = (): Check => {
    const checks = [and()];
    while (peek() === 'or') {
      i++;
      checks.push(and());
    }
    return checks.length === 1 ? checks[0]! : { kind: 'or', checks };
  };

  const check = or();
  if (i < tokens.length) fail(tokens[i]!.t === ')' ? 'a ")" closes nothing' : `"${tokens[i]!.t === 'check' ? 'check' : tokens[i]!.t}" after a complete rule`);
  return check;
}

/** The rule text back from a tree (for `cyborg policy list` and logs). */
export function formatCheck(c: Check, top = true): string {
  switch (c.kind) {
    case 'true':
      return '@';
    case 'false':
      return '!';
    case 'not':
      return `not ${formatCheck(c.check, false)}`;
    case 'rule':
      return `rule:${c.name}`;
    case 'role':
      return `role:${c.match}`;
    case 'generic':
      return `${c.field}:${c.match}`;
    case 'and':
    case 'or': {
      const s = c.checks.map((x) => formatCheck(x, false)).join(` ${c.kind} `);
      return top ? s : `(${s})`;
    }
  }
}
