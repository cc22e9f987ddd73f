import { constants, PerformanceObserver } from 'node:perf_hooks';

const MiB = 1024 * 1024;

export interface Memory {
  beforeMiB: number;
  peakMiB: number;
  afterMiB: number;
  /** The JS heap in use at the start and at its peak. */
  heapBeforeMiB: number;
  heapPeakMiB: number;
  /**
   * The heap in use right after the last full collection of the window (null: none ran, the heap
   * never grew enough to need one): the live set, what a leak would grow. RSS keeps the pages
   * V8 once grew to, and a heap read between collections counts garbage.
   */
  liveAfterMiB: number | null;
}

/** This process's resident memory and JS heap, sampled every 100 ms until `stop()`, in MiB. */
export function sampleRss(): { stop(): Memory } {
  const first = process.memoryUsage();
  let peak = first.rss;
  let heapPeak = first.heapUsed;
  let live: number | null = null;
  // A full collection has just ended: the next sample's heap is (close to) the live set.
  let afterMajor = false;
  const gc = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) afterMajor = true;
  });
  gc.observe({ entryTypes: ['gc'] });
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
    if (afterMajor) live = m.heapUsed;
    afterMajor = false;
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      gc.disconnect();
      const m = process.memoryUsage();
      return {
        beforeMiB: first.rss / MiB,
        peakMiB: Math.max(peak, m.rss) / MiB,
        afterMiB: m.rss / MiB,
        heapBeforeMiB: first.heapUsed / MiB,
        heapPeakMiB: Math.max(heapPeak, m.heapUsed) / MiB,
        liveAfterMiB: live === null ? null : live / MiB,
      };
    },
  };
}
