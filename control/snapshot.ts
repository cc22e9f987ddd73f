import type { ArqView, CommittedState, Documents } from '../model/index.js';
import type { SnapshotCursorMsg, SnapshotPageMsg } from './messages.js';
import { wireSize } from './payload.js';

/** What a snapshot reads of a conductor: its hosts (with their accelerators), ARQs and documents. */
export interface SnapshotSource {
  readonly hosts: CommittedState['hosts'];
  listArqs(): ArqView[];
  readonly documents: Documents;
}

export interface PageOptions {
  conductorId: string;
  epoch: string;
  seq: number;
  conductors: string[];
  /** Whether this conductor serves ARQs and documents (the ARQ home, or the only conductor). */
  servesArqs: boolean;
  /** The page's JSON stays under this many bytes. */
  budget: number;
}

type Part = SnapshotCursorMsg['part'];
const PARTS: Part[] = ['hosts', 'arqs', 'documents'];
/** What the page's envelope and fields weigh besides the items (ids, conductor list, cursor). */
const ENVELOPE = 4_096;

/**
 * One page of a conductor's committed state from `cursor` on: items in key order, as many as fit
 * in `budget`. A single item heavier than the budget travels alone (the reply check refuses it
 * then, naming its size, rather than the page being lost on the way).
 */
export function snapshotPage(src: SnapshotSource, o: PageOptions, cursor: SnapshotCursorMsg = { part: 'hosts', after: null }): SnapshotPageMsg {
  const page: SnapshotPageMsg = {
    conductorId: o.conductorId,
    epoch: o.epoch,
    seq: o.seq,
    conductors: o.conductors,
    hosts: [],
    accelerators: [],
    arqs: [],
    documents: [],
    next: null,
  };
  let used = ENVELOPE + wireSize(o.conductors);
  let count = 0;
  for (const part of PARTS.slice(PARTS.indexOf(cursor.part))) {
    if (part !== 'hosts' && !o.servesArqs) break;
    let last = part === cursor.part ? cursor.after : null;
    for (const [key, add] of itemsOf(src, part, last)) {
      const size = add(undefined);
      if (count > 0 && used + size > o.budget) {
        page.next = { part, after: last };
        return page;
      }
      add(page);
      used += size;
      count++;
      last = key;
    }
  }
  return page;
}

type Adder = (page: SnapshotPageMsg | undefined) => number;

/** Each item of a part after `after`, in key order, as a function that weighs it and, given a page, adds it. */
function* itemsOf(src: SnapshotSource, part: Part, after: string | null): Generator<[string, Adder]> {
  if (part === 'hosts') {
    for (const name of [...src.hosts.keys()].sort()) {
      if (after !== null && name <= after) continue;
      const h = src.hosts.get(name)!;
      const entry = { view: h.view(), inventory: h.inventory() };
      const accs = [...h.accelerators.values()].map((a) => a.view());
      yield [
        name,
        (p) => {
          if (p) {
            p.hosts.push(entry);
            p.accelerators.push(...accs);
          }
          return wireSize(entry) + wireSize(accs);
        },
      ];
    }
    return;
  }
  if (part === 'arqs') {
    const arqs = src.listArqs().sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
    for (const a of arqs) {
      if (after !== null && a.uuid <= after) continue;
      yield [a.uuid, (p) => (p?.arqs.push(a), wireSize(a) + 1)];
    }
    return;
  }
  const docs = documentsOf(src).sort((a, b) => (docKey(a) < docKey(b) ? -1 : 1));
  for (const d of docs) {
    if (after !== null && docKey(d) <= after) continue;
    yield [docKey(d), (p) => (p?.documents.push(d), wireSize(d) + 1)];
  }
}

type Doc = SnapshotPageMsg['documents'][number];

function documentsOf(src: SnapshotSource): Doc[] {
  const d = src.documents;
  return [
    ...d.listProfiles().map((x) => ({ collection: 'device_profiles', id: x.uuid, body: x as unknown as Record<string, unknown> })),
    ...d.listAttributes().map((x) => ({ collection: 'attributes', id: x.uuid, body: x as unknown as Record<string, unknown> })),
  ];
}

function docKey(d: Doc): string {
  return `${d.collection}/${d.id}`;
}
