/**
 * The ARQs bound to each instance, by their committed views: Nova's resolved query and its
 * delete by instance (`?instance=`) find an instance's ARQs with one map lookup instead of a walk
 * of every ARQ in the cloud, which each boot would otherwise pay two to four times.
 *
 * Kept exact by whoever hosts the ARQs: `set` each time an ARQ's committed view changes, `delete`
 * when its actor goes. Readers still check each ARQ's view (see Supervisor.arqsOfInstance).
 */
export class ArqInstanceIndex {
  private readonly byInstance = new Map<string, Set<string>>();
  private readonly instanceOf = new Map<string, string>();

  /** ARQ `uuid` is now bound to `instance` (undefined: to none). */
  set(uuid: string, instance: string | undefined): void {
    const prev = this.instanceOf.get(uuid);
    if (prev === instance) return;
    if (prev !== undefined) {
      const set = this.byInstance.get(prev);
      set?.delete(uuid);
      if (set?.size === 0) this.byInstance.delete(prev);
    }
    if (instance === undefined) {
      this.instanceOf.delete(uuid);
      return;
    }
    this.instanceOf.set(uuid, instance);
    const set = this.byInstance.get(instance);
    if (set) set.add(uuid);
    else this.byInstance.set(instance, new Set([uuid]));
  }

  delete(uuid: string): void {
    this.set(uuid, undefined);
  }

  /** The ARQs last seen bound to `instance`, in the order they were bound. */
  arqsOf(instance: string): readonly string[] {
    const set = this.byInstance.get(instance);
    return set ? [...set] : [];
  }

  /** Instances with at least one ARQ (tests: nothing is kept for an instance with none). */
  get size(): number {
    return this.byInstance.size;
  }

  clear(): void {
    this.byInstance.clear();
    this.instanceOf.clear();
  }
}
