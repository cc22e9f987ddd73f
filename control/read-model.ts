import type { AcceleratorView, ArqView, DeviceT, HostView } from '../model/index.js';
import type { SnapshotPageMsg, ViewsBatchMsg } from './messages.js';

/**
 * The committed views an api process reads: hosts (with their inventories), accelerators, ARQs and
 * documents, as the conductors published them. Views are replaced whole, so applying one twice,
 * or a snapshot page and then the views numbered after it, ends in the same state.
 */
export class ReadModel {
  readonly hosts = new Map<string, HostView>();
  readonly inventories = new Map<string, DeviceT[]>();
  readonly accelerators = new Map<string, AcceleratorView>();
  readonly byRp = new Map<string, string>();
  readonly arqs = new Map<string, ArqView>();
  readonly docs = new Map<string, Map<string, object>>();

  /** Applies one views message's views (its transitions are the caller's to publish). */
  applyViews(b: Pick<ViewsBatchMsg, 'hosts' | 'accelerators' | 'arqs' | 'documents' | 'deleted'>): void {
    for (const h of b.hosts) {
      this.hosts.set(h.view.name, h.view);
      if (h.inventory) this.inventories.set(h.view.name, h.inventory);
    }
    for (const a of b.accelerators) this.putAccelerator(a);
    for (const a of b.arqs) this.arqs.set(a.uuid, a);
    for (const id of b.deleted?.arqs ?? []) this.arqs.delete(id);
    for (const name of b.deleted?.hosts ?? []) this.forgetHost(name);
    for (const d of b.documents) this.putDocument(d.collection, d.id, d.body);
  }

  applyPage(p: SnapshotPageMsg): void {
    this.applyViews(p);
  }

  putAccelerator(v: AcceleratorView): void {
    const cur = this.accelerators.get(v.id);
    // Views of one accelerator come from its one conductor in commit order; a reply may race a batch.
    if (cur && cur.generation > v.generation && cur.updatedAt >= v.updatedAt) return;
    this.accelerators.set(v.id, v);
    this.byRp.set(v.rpUuid, v.id);
  }

  /** A retired host: its view, inventory and accelerators leave the API. */
  forgetHost(name: string): void {
    this.hosts.delete(name);
    this.inventories.delete(name);
    for (const [id, a] of this.accelerators) {
      if (a.host !== name) continue;
      this.accelerators.delete(id);
      if (this.byRp.get(a.rpUuid) === id) this.byRp.delete(a.rpUuid);
    }
  }

  putDocument(collection: string, id: string, body: object | null): void {
    let m = this.docs.get(collection);
    if (!m) this.docs.set(collection, (m = new Map()));
    if (body) m.set(id, body);
    else m.delete(id);
  }

  counts(): { hosts: number; accelerators: number; arqs: number } {
    return { hosts: this.hosts.size, accelerators: this.accelerators.size, arqs: this.arqs.size };
  }
}
