/**
 * bench:fleet's `--flapping <share>`: that share of the fleet's accelerators flaps (the fake
 * driver's `flapping` fault: bad, good, bad, … at every check) while every agent polls at 1 Hz.
 * The Placement writes it causes are counted at the Placement sync's boundary: the committed views
 * the conductor publishes (`cyborg.views`, what the api and the sync read), each change of what
 * `desiredOf` asks of a provider (usable or reserved, inventory, traits) being one write the sync
 * would send — before the sync's own coalescing, so an upper bound of what a real Placement gets.
 */
import type { Unsubscribe } from '../../bus/index.js';
import type { NatsBus } from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { ViewsBatch, type ViewsBatchMsg } from '../../control/index.js';
import type { FakeDriver } from '../../drivers/index.js';
import { desiredOf } from '../../openstack/placement/index.js';

/** Each flapping device should be reserved once (quarantined), not at every flap: ≤ 1 write each. */
const TARGET_WRITES_PER_FLAPPING_DEVICE = 1;

export interface FlappingWrites {
  flapping: number;
  quarantined: number;
  writes: number;
  peakPerS: number;
  /** Writes in the window's second half: once quarantined, a flapping device costs nothing more. */
  lateWrites: number;
}

export class FlappingFleet {
  private readonly fakes: FakeDriver[] = [];
  /** What each provider is asked to be, as last published. */
  private readonly desired = new Map<string, string>();
  private readonly health = new Map<string, string>();
  /** Accelerators in service (usable in Placement) now. */
  private readonly usable = new Set<string>();
  private counting = false;
  private writes = 0;
  private readonly perSecond = new Map<number, number>();
  private flappingIds: string[] = [];
  private startedAt = 0;
  private readonly off: Unsubscribe;

  constructor(
    bus: NatsBus,
    private readonly share: number,
  ) {
    this.off = bus.subscribe(Subjects.views, ViewsBatch, (batch) => this.views(batch));
  }

  add(fake: FakeDriver): void {
    this.fakes.push(fake);
  }

  /** Waits for the fleet to be in service (auto-enabled), then makes every 1/share-th accelerator flap. */
  async begin(accelerators: number): Promise<void> {
    for (const deadline = Date.now() + 600_000; this.usable.size < accelerators; ) {
      if (Date.now() > deadline) throw new Error(`only ${this.usable.size} of ${accelerators} accelerators came into service`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const every = Math.max(1, Math.round(1 / this.share));
    let n = 0;
    for (const fake of this.fakes) {
      for (const dev of await fake.discover()) {
        for (const dep of dev.deployables) {
          if (n++ % every === 0) {
            fake.injectHealthFault(dep.uuid, 'flapping', 'bench: flapping');
            this.flappingIds.push(dep.uuid);
          }
        }
      }
    }
    this.counting = true;
    this.startedAt = Date.now();
  }

  end(): FlappingWrites {
    this.counting = false;
    const quarantined = this.flappingIds.filter((id) => this.health.get(id) === 'quarantined').length;
    const half = Math.floor((this.startedAt + (Date.now() - this.startedAt) / 2) / 1000);
    const lateWrites = [...this.perSecond].filter(([sec]) => sec >= half).reduce((n, [, w]) => n + w, 0);
    return { flapping: this.flappingIds.length, quarantined, writes: this.writes, peakPerS: Math.max(0, ...this.perSecond.values()), lateWrites };
  }

  print(w: FlappingWrites, windowS: number): void {
    const perMin = (w.writes / windowS) * 60;
    const each = w.writes / Math.max(1, w.flapping);
    console.log(`  flapping at 1 Hz         ${w.flapping} accelerators (${(this.share * 100).toFixed(2)} %), ${w.quarantined} quarantined by the window's end`);
    console.log(
      `  Placement writes         ${w.writes} over ${windowS} s = ${perMin.toFixed(0)}/min (${((w.lateWrites / (windowS / 2)) * 60).toFixed(0)}/min in its second half), peak ${w.peakPerS}/s; ${each.toFixed(2)} per flapping device (target ≤ ${TARGET_WRITES_PER_FLAPPING_DEVICE} → ${(each / TARGET_WRITES_PER_FLAPPING_DEVICE).toFixed(2)}x of target; unchecked, 1 Hz flapping would be ${w.flapping * 60}/min)`,
    );
  }

  stop(): void {
    this.off();
  }

  private views(batch: ViewsBatchMsg): void {
    for (const v of batch.accelerators) {
      const d = desiredOf(v as Parameters<typeof desiredOf>[0]);
      const key = d.ok ? `${d.desired.present}|${d.desired.usable}|${d.desired.total}|${d.desired.traits.join(',')}` : 'none';
      const before = this.desired.get(v.id);
      if (before !== key) {
        if (d.ok && d.desired.usable) this.usable.add(v.id);
        else this.usable.delete(v.id);
        this.desired.set(v.id, key);
        if (this.counting && before !== undefined) {
          this.writes++;
          const s = Math.floor(Date.now() / 1000);
          this.perSecond.set(s, (this.perSecond.get(s) ?? 0) + 1);
        }
      }
      const h = v.health?.status ?? 'ok';
      if (h !== 'ok' || this.health.has(v.id)) this.health.set(v.id, h);
    }
  }
}
