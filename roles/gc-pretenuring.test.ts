import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';

describe('allocation-site pretenuring', () => {
  it('is off in a conductor unless CYBORG_GC_PRETENURING asks for it', () => {
    expect(loadConfig({}, {}).persistence.gcPretenuring).toBe(false);
    expect(loadConfig({}, { CYBORG_GC_PRETENURING: '1' }).persistence.gcPretenuring).toBe(true);
    expect(loadConfig({}, { CYBORG_GC_PRETENURING: '0' }).persistence.gcPretenuring).toBe(false);
  });
});
