import { describe, expect, it } from 'vitest';
import type { Change } from '../actors/runtime/index.js';
import { CyborgError } from '../errors/index.js';
import { checkChanges } from './bounds.js';
import { recordOf } from '../test/support/records.js';

const accelerator = (host: string, value = 'enabled', context: Record<string, unknown> = {}): Change => ({
  type: 'accelerator',
  id: 'a1',
  host,
  record: recordOf(value, context),
});

function refusal(changes: Change[]): CyborgError | undefined {
  try {
    checkChanges(changes);
    return undefined;
  } catch (err) {
    return err as CyborgError;
  }
}

describe('what the journal refuses before queueing a change', () => {
  it('NUL and lone surrogates anywhere, keys of contexts included, are refused with a 400 naming the field', () => {
    const nul = refusal([{ type: 'inventory', host: 'compute-1\u0000', devices: [] }]);
    expect(nul).toBeInstanceOf(CyborgError);
    expect(nul!.code).toBe('persistence.invalid_value');
    expect(nul!.status).toBe(400);
    expect(nul!.details.field).toBe('host');
    expect(refusal([accelerator('h', 'enabled', { deep: [{ 'k\u0000': 1 }] })])?.details.field).toBe('accelerator context');
    expect(refusal([accelerator('h', 'enabled', { note: 'half a pair \ud83d' })])?.code).toBe('persistence.invalid_value');
    expect(refusal([accelerator('h', 'enabled', { note: 'a whole pair \ud83d\ude00' })])).toBeUndefined();
  });

  it('strings longer than their column are refused; the length counts characters, as PostgreSQL does', () => {
    expect(refusal([accelerator('h'.repeat(256))])?.details.field).toBe('host');
    expect(refusal([accelerator('h'.repeat(255))])).toBeUndefined();
    expect(refusal([accelerator('\u{1F600}'.repeat(255))])).toBeUndefined();
    expect(refusal([{ type: 'arq', uuid: 'u'.repeat(37), record: recordOf('Initial'), deleted: true }])?.details.field).toBe('ARQ uuid');
  });

  it('a context nested deeper than any stack is walked without overflowing it', () => {
    let deep: Record<string, unknown> = { leaf: 'ok' };
    for (let i = 0; i < 100_000; i++) deep = { next: deep };
    expect(refusal([accelerator('h', 'enabled', deep)])).toBeUndefined();
  });

  it('a time PostgreSQL cannot read and an integer beyond int4 are refused', () => {
    const at = 'not a time';
    expect(refusal([{ type: 'transition', record: { kind: 'accelerator', id: 'a', event: 'E', from: 'inactive', to: 'ready', at } }])?.details.field).toBe(
      'transition time',
    );
    const ctx = { deviceProfileName: 'p', deviceProfileGroupId: 2 ** 31 };
    expect(refusal([{ type: 'arq', uuid: 'u', record: recordOf('Initial', ctx), deleted: false }])?.details.field).toBe('device profile group id');
  });
});
