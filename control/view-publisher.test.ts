import { describe, expect, it } from 'vitest';
import { InProcessBus } from '../bus/in-process.js';
import { Subjects } from '../bus/subjects.js';
import { EventHub, type AcceleratorView, type CommittedHost, type HostView } from '../model/index.js';
import { quietLogger } from '../test/support/log.js';
import { Type } from '@sinclair/typebox';
import type { ViewsBatchMsg } from './messages.js';
import { ViewPublisher } from './view-publisher.js';

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
