import { describe, expect, it } from 'vitest';
import type { SnapshotPageMsg } from './messages.js';
import { pageOutOfOrder } from './view-sync.js';

const page = (o: Partial<SnapshotPageMsg>): SnapshotPageMsg => ({
  conductorId: 'c1',
  epoch: 'e1',
  seq: 3,
  conductors: ['c1'],
  hosts: [],
  accelerators: [],
  arqs: [],
  documents: [],
  next: null,
  ...o,
});
const host = (name: string) => ({ view: { name }, inventory: [] }) as unknown as SnapshotPageMsg['hosts'][number];
const arq = (uuid: string) => ({ uuid }) as unknown as SnapshotPageMsg['arqs'][number];

describe('a snapshot page out of order is refused with its reason', () => {
  it('takes the page that follows the cursor asked from, across parts', () => {
    expect(pageOutOfOrder('c1', { part: 'hosts', after: 'h2' }, page({ hosts: [host('h3')], next: { part: 'hosts', after: 'h3' } }))).toBeUndefined();
    expect(pageOutOfOrder('c1', { part: 'hosts', after: 'h9' }, page({ arqs: [arq('a1')], next: { part: 'arqs', after: 'a1' } }))).toBeUndefined();
    expect(pageOutOfOrder('c1', { part: 'hosts', after: 'h9' }, page({ next: { part: 'arqs', after: null } }))).toBeUndefined();
    expect(pageOutOfOrder('c1', { part: 'arqs', after: null }, page({ arqs: [arq('a1')] }))).toBeUndefined();
  });

  it("refuses another conductor's page, a page repeated, and a cursor that goes back", () => {
    expect(pageOutOfOrder('c1', { part: 'hosts', after: 'h2' }, page({ conductorId: 'c2', hosts: [host('h3')] }))).toBe(
      "a page of conductor c2 where c1's was asked for",
    );
    expect(pageOutOfOrder('c1', { part: 'hosts', after: 'h2' }, page({ hosts: [host('h1'), host('h2')], next: { part: 'hosts', after: 'h2' } }))).toBe(
      'its first item (hosts h1) is not after the cursor asked from (hosts h2)',
    );
    expect(pageOutOfOrder('c1', { part: 'arqs', after: 'a5' }, page({ hosts: [host('h1')] }))).toBe(
      'its first item (hosts h1) is not after the cursor asked from (arqs a5)',
    );
    expect(pageOutOfOrder('c1', { part: 'arqs', after: 'a5' }, page({ next: { part: 'hosts', after: 'h1' } }))).toBe(
      'its cursor (hosts h1) does not move past the one asked from (arqs a5)',
    );
  });
});
