import { describe, expect, it } from 'vitest';
import { ArqInstanceIndex } from './arq-instance-index.js';

describe('ArqInstanceIndex', () => {
  it('follows an ARQ from instance to instance and forgets it when it goes', () => {
    const ix = new ArqInstanceIndex();
    ix.set('a', 'vm-1');
    ix.set('b', 'vm-1');
    ix.set('c', undefined);
    expect(ix.arqsOf('vm-1')).toEqual(['a', 'b']);
    ix.set('b', 'vm-2');
    expect(ix.arqsOf('vm-1')).toEqual(['a']);
    expect(ix.arqsOf('vm-2')).toEqual(['b']);
    ix.set('a', undefined);
    ix.delete('b');
    expect(ix.arqsOf('vm-1')).toEqual([]);
    expect(ix.arqsOf('vm-2')).toEqual([]);
    // Nothing is kept for an instance that has no ARQ left.
    expect(ix.size).toBe(0);
  });

  it('setting the same instance twice keeps one entry; clear forgets everything', () => {
    const ix = new ArqInstanceIndex();
    ix.set('a', 'vm-1');
    ix.set('a', 'vm-1');
    expect(ix.arqsOf('vm-1')).toEqual(['a']);
    ix.clear();
    expect(ix.arqsOf('vm-1')).toEqual([]);
    expect(ix.size).toBe(0);
  });
});
