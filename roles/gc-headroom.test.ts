import { describe, expect, it } from 'vitest';
import { growingPercentFor } from './gc-headroom.js';

const MiB = 2 ** 20;

describe('heap headroom', () => {
  it('gives a small live heap a large growing factor: the headroom in bytes past it', () => {
    expect(growingPercentFor(150 * MiB, 1024 * MiB)).toBe(683);
  });

  it('leaves a live heap over a third of the headroom to V8, whose own factor is at most 4x', () => {
    expect(growingPercentFor(330 * MiB, 1024 * MiB)).toBe(310);
    expect(growingPercentFor(342 * MiB, 1024 * MiB)).toBe(0);
    expect(growingPercentFor(1024 * MiB, 1024 * MiB)).toBe(0);
  });

  it('bounds the factor of a near-empty heap', () => {
    expect(growingPercentFor(1 * MiB, 1024 * MiB)).toBe(2_000);
    expect(growingPercentFor(0, 1024 * MiB)).toBe(2_000);
  });
});
