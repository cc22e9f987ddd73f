import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import type { Logger } from 'pino';

/**
 * Room for the conductor's old generation to grow past its live size between major GCs.
 *
 * Why: V8 lets the old generation grow to at most ~4× what the last mark-compact left live, and
 * each mark-compact stalls acknowledgements for 100–250 ms on a small machine. A conductor under
 * load promotes what each accelerator keeps between its transitions (its context, its committed
 * record, its event in the hub's ring): ~10 MB/s at half its peak with 10,000 accelerators
 * (bench:persistence, pretenuring off: gc-pretenuring.ts), so V8's ~4× of a ~150 MB live heap
 * brings one every ~45 s, and a gibibyte of room one every ~100 s — at most one in the minute the
 * bench measures its half-peak p99 over. (Session 8, with XState's interpreter and pretenuring,
 * promoted ~2.4 KB per transition: one every ~13 s, and the p99 over a minute was 71 and 94 ms
 * without the headroom; docs/persistence.md.)
 *
 * The room is absolute, not a factor: what is live after each mark-compact sets the growing
 * factor for the next (V8's `--heap-growing-percent`, read at every GC), so a small conductor
 * gets a large factor, and one whose live heap is over a third of the headroom keeps V8's own
 * sizing. V8's heap limit (set from the machine's or container's memory) still bounds it.
 */
export function keepHeapHeadroom(headroomBytes: number, log: Logger): () => void {
  if (headroomBytes <= 0) return () => undefined;
  let current = -1;
  const apply = (): void => {
    const live = oldGenerationUsed();
    const percent = growingPercentFor(live, headroomBytes);
    if (percent === current) return;
    current = percent;
    v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
    log.debug({ liveMiB: Math.round(live / 2 ** 20), heapGrowingPercent: percent }, 'heap headroom set');
  };
  apply();
  const gcs = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) apply();
  });
  gcs.observe({ entryTypes: ['gc'] });
  return () => {
    gcs.disconnect();
    // The flag is the process's: a stopped conductor leaves V8 to its own (tests start many).
    if (current > 0) v8.setFlagsFromString('--heap-growing-percent=0');
  };
}

/**
 * V8's own growing factor reaches 4× (300 %); a headroom that asks for less is left to V8 (0 =
 * its heuristics), so that a conductor never collects more often than V8 would at its most
 * generous.
 */
const MIN_PERCENT = 300;

/** However small the live heap, the factor stays bounded (a near-empty heap would ask for ∞). */
const MAX_PERCENT = 2_000;

/** What the old generation holds now: right after a mark-compact, about what is live. */
function oldGenerationUsed(): number {
  let bytes = 0;
  for (const s of v8.getHeapSpaceStatistics()) if (!s.space_name.startsWith('new_')) bytes += s.space_used_size;
  return bytes;
}

/** The `--heap-growing-percent` that leaves `headroomBytes` past `liveBytes`, or 0 for V8's own. */
export function growingPercentFor(liveBytes: number, headroomBytes: number): number {
  const percent = Math.round((100 * headroomBytes) / Math.max(1, liveBytes));
  if (percent <= MIN_PERCENT) return 0;
  return Math.min(MAX_PERCENT, percent);
}
