import { describe, expect, it } from 'vitest';
import { svc } from '../services.js';
import { previousAvailable, PREVIOUS, storyAsked } from './roll.js';
import { rollingUpgrade } from './story.js';

/**
 * The other order: agents first, pinned to the older protocol ([upgrade_levels] protocol = 1),
 * then the conductors, the api, and the agents again without the pin; then contract.
 */
describe.skipIf(!storyAsked || !svc.nats || !svc.postgres || !previousAvailable)(
  `a rolling upgrade from ${PREVIOUS}: agents first, pinned`,
  { timeout: 900_000 },
  () => {
    it('loses no acknowledged write, fails no Nova boot, and ends with every role on the new protocol', async () => {
      const steps = await rollingUpgrade('agents-first', { nats: svc.nats!, postgres: svc.postgres! });
      expect(steps.length).toBeGreaterThan(5);
    });
  },
);
