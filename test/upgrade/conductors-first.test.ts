import { describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { previousAvailable, PREVIOUS, storyAsked } from './roll.js';
import { rollingUpgrade } from './story.js';

/**
 * docs/upgrade.md's order on real NATS and PostgreSQL: the previous release's two conductors,
 * api and three agents under Nova's load; expand; each conductor; the api; each agent; contract.
 */
describe.skipIf(!storyAsked || !svc.nats || !svc.postgres || !previousAvailable)(
  `a rolling upgrade from ${PREVIOUS}: conductors, api, agents`,
  { timeout: 900_000 },
  () => {
    it('loses no acknowledged write, fails no Nova boot, and ends with every role on the new protocol; a downgrade after contract is refused', async () => {
      const steps = await rollingUpgrade('conductors-first', { nats: svc.nats!, postgres: svc.postgres! });
      expect(steps.length).toBeGreaterThan(5);
    });
  },
);
