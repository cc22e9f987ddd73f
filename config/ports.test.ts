import { describe, expect, it } from 'vitest';
import { browserBlocksPort, PORTS } from './ports.js';

describe('default ports', () => {
  it('the all-in-one, which a person opens in a browser, is on a port browsers accept', () => {
    expect(browserBlocksPort(PORTS.allInOne)).toBe(false);
  });

  it("Cyborg's own 6666 is known to be refused by browsers", () => {
    expect(browserBlocksPort(PORTS.api)).toBe(true);
  });

  it('co-located roles have distinct metrics ports', () => {
    expect(PORTS.agentMetrics).not.toBe(PORTS.conductorMetrics);
  });
});
