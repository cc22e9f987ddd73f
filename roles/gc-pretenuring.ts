import v8 from 'node:v8';
import type { Logger } from 'pino';

/**
 * Turns V8's allocation-site pretenuring off for this process: every object is born young and
 * reaches the old generation only by outliving two scavenges.
 *
 * Why: under a burst of load (bench:persistence's closed-loop peak, a fleet registering) most
 * objects of the conductor's hot allocation sites — transition records, contexts, the flush's
 * column strings — outlive a scavenge, so V8 starts allocating them straight in the old
 * generation, and keeps doing so once the burst is over and they die within milliseconds. That
 * garbage is what brings the next mark-compact, and each stalls acknowledgements for 100–200 ms on
 * a small machine. Measured at half the peak with 10,000 accelerators: the old generation grew
 * 10 MB/s instead of 17–23, scavenges paused 9.5–9.8 ms on average instead of 13.9, and no
 * mark-compact fell in a 40 s window (docs/persistence.md). V8 reads the flag when it decides,
 * so setting it at run time, before the load, is enough.
 */
export function stopPretenuring(log: Logger): () => void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
  log.debug('allocation-site pretenuring off');
  // The flag is the process's: a stopped conductor gives it back (tests start many).
  return () => v8.setFlagsFromString('--allocation-site-pretenuring');
}
