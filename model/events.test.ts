import { describe, expect, it } from 'vitest';
import { EventHub, type TransitionRecord } from './events.js';

const rec = (id: string): TransitionRecord => ({ kind: 'accelerator', id, event: 'ENABLE', from: 'inactive', to: 'installing', at: '2026-11-22T00:00:00Z' });

describe('EventHub', () => {
  it('numbers events in order and replays those after a cursor', () => {
    const hub = new EventHub(5);
    for (let i = 1; i <= 3; i++) hub.publish(rec(`a${i}`));
    expect(hub.cursor).toBe(3);
    expect(hub.since(1)).toEqual({ events: [expect.objectContaining({ seq: 2, id: 'a2' }), expect.objectContaining({ seq: 3, id: 'a3' })], complete: true });
    expect(hub.since(3).events).toEqual([]);
  });

  it('keeps only the last `capacity` events, and says when a cursor fell out of the ring', () => {
    const hub = new EventHub(5);
    for (let i = 1; i <= 12; i++) hub.publish(rec(`a${i}`));
    expect(hub.since(7)).toEqual({ events: [8, 9, 10, 11, 12].map((seq) => expect.objectContaining({ seq, id: `a${seq}` })), complete: true });
    const late = hub.since(2);
    expect(late.complete).toBe(false);
    expect(late.events.map((e) => e.seq)).toEqual([8, 9, 10, 11, 12]);
  });

  it('keeps announcing when a listener throws', () => {
    const hub = new EventHub();
    const seen: number[] = [];
    hub.subscribe(() => {
      throw new Error('observer bug');
    });
    hub.subscribe((e) => seen.push(e.seq));
    hub.publish(rec('a'));
    expect(seen).toEqual([1]);
  });
});
