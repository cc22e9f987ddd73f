import { describe, expect, it } from 'vitest';
import { InProcessBus } from '../bus/in-process.js';
import { Subjects } from '../bus/subjects.js';
import { EventHub, type AcceleratorView, type CommittedHost, type HostView } from '../model/index.js';
import { quietLogger } from '../test/support/log.js';
import { Type } from '@sinclair/typebox';
import type { ViewsBatchMsg } from './messages.js';
import { bodyOf, ViewPublisher, viewsJson, type Piece } from './view-publisher.js';

/** A host as the conductor's committed state shows it, with two accelerators (only the fields read here). */
function hostWithTwo(name: string): CommittedHost {
  const view = (id: string): AcceleratorView => ({ id, host: name }) as unknown as AcceleratorView;
  return {
    name,
    state: 'online',
    view: () => ({ name, state: 'online' }) as unknown as HostView,
    inventory: () => [],
    accelerators: new Map([
      ['a1', { view: () => view('a1') }],
      ['a2', { view: () => view('a2') }],
    ]),
  };
}

describe('view publisher', () => {
  it('publishes an adopted host with every accelerator it holds: no transition would announce them', async () => {
    const bus = new InProcessBus(quietLogger());
    const hosts = new Map([['node-1', hostWithTwo('node-1')]]);
    const publisher = new ViewPublisher(bus, { hub: new EventHub(), hosts, arqs: new Map() }, 'c1', undefined, 60_000);
    const seen: ViewsBatchMsg[] = [];
    // Read without the schema: the views here carry only the fields the publisher reads.
    bus.subscribe(Subjects.views, Type.Unknown(), (m) => void seen.push(m as ViewsBatchMsg));

    publisher.adopted('node-1');
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));

    expect(seen).toHaveLength(1);
    expect(seen[0]!.hosts.map((h) => h.view.name)).toEqual(['node-1']);
    expect(seen[0]!.hosts[0]!.inventory).toEqual([]);
    expect(seen[0]!.accelerators.map((a) => a.id).sort()).toEqual(['a1', 'a2']);
    publisher.stop();
  });
});

describe('a views message put together from its pieces written once', () => {
  const head = { conductorId: 'c1', epoch: 'e1', seq: 7 };
  const cases: Record<string, Piece[]> = {
    'every kind, hosts retired': [
      { k: 'host', v: { view: { name: 'h1' } as unknown as HostView, inventory: [] } },
      { k: 'accelerator', v: { id: 'a1', host: 'h1', name: 'é "quoted"\n' } as unknown as AcceleratorView },
      { k: 'arq', v: { uuid: 'q1' } as never },
      { k: 'document', v: { collection: 'device_profiles', id: 'd1', body: null } },
      { k: 'deleted', v: 'q2' },
      { k: 'hostDeleted', v: 'h9' },
      { k: 'transition', v: { kind: 'arq', id: 'q1', from: 'Initial', to: 'Bound' } as never },
    ],
    'no host retired': [
      { k: 'arq', v: { uuid: 'q1' } as never },
      { k: 'arq', v: { uuid: 'q3' } as never },
    ],
    'nothing but a deletion': [{ k: 'deleted', v: 'q4' }],
  };
  for (const [what, pieces] of Object.entries(cases)) {
    it(`reads back as the message JSON.stringify makes: ${what}`, () => {
      const json = viewsJson(
        head,
        pieces.map((p) => p.k),
        pieces.map((p) => JSON.stringify(p.v)),
      );
      expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify({ ...head, ...bodyOf(pieces) })));
    });
  }
});
