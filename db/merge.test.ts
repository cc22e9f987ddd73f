import { describe, expect, it } from 'vitest';
import type { Change } from '../actors/runtime/index.js';
import type { TransitionRecord } from '../model/index.js';
import { canonicalJson, mergeChanges, touchesModel } from './merge.js';
import { recordOf } from '../test/support/records.js';

const rec = <C>(value: string) => recordOf<C>(value, { value });
const tr = (id: string, to: TransitionRecord['to']): Change => ({
  type: 'transition',
  record: { kind: 'accelerator', id, event: 'E', from: 'inactive', to, at: '2026-01-01T00:00:00Z' },
});

describe('mergeChanges', () => {
  it('keeps the last record of each accelerator and every transition, in order', () => {
    const m = mergeChanges([
      { type: 'accelerator', id: 'a', host: 'h', record: rec('installing') },
      tr('a', 'installing'),
      { type: 'accelerator', id: 'b', host: 'h', record: rec('installing') },
      tr('b', 'installing'),
      { type: 'accelerator', id: 'a', host: 'h', record: rec('ready') },
      tr('a', 'ready'),
    ]);
    expect([...m.accelerators].map(([id, a]) => [id, a.record.value])).toEqual([
      ['a', 'ready'],
      ['b', 'installing'],
    ]);
    expect(m.transitions.map((t) => `${t.id}:${t.to}`)).toEqual(['a:installing', 'b:installing', 'a:ready']);
    expect(touchesModel(m)).toBe(false);
  });

  it('a later delete of an ARQ or document wins over its earlier writes', () => {
    const m = mergeChanges([
      { type: 'arq', uuid: 'q', record: rec('Initial'), deleted: false },
      { type: 'arq', uuid: 'q', record: rec('Deleted'), deleted: true },
      { type: 'document', collection: 'c', id: '1', body: { a: 1 } },
      { type: 'document', collection: 'c', id: '1', body: null },
    ]);
    expect(m.arqs.get('q')!.deleted).toBe(true);
    expect([...m.documents.values()]).toEqual([{ collection: 'c', id: '1', body: null }]);
    expect(touchesModel(m)).toBe(true);
  });
});

describe('canonicalJson', () => {
  it('ignores key order, not array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe(canonicalJson({ a: { c: null, d: [2, 1] }, b: 1 }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});
