import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { FencedJournal } from './fenced-journal.js';
import { HostRouter, type RoutedConductor } from './host-router.js';
import type { LeaseTable } from './lease.js';

const log = pino({ level: 'silent' });

/**
 * A takeover's rebuild from the database and an agent's report racing for the same host: the
 * lease (a stand-in that hands out every claim as a takeover), the journal (whose load the test
 * holds) and the conductor (a map of hosts) are fakes; the router is the real one.
 */
function setup() {
  const ours = new Set<string>();
  const lease = {
    id: 'me',
    owns: (h: string) => ours.has(h),
    ownerOf: () => undefined,
    claim: async (h: string) => {
      ours.add(h);
      return { mine: true, takeover: true };
    },
  } as unknown as LeaseTable;
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let loading!: () => void;
  const loadStarted = new Promise<void>((r) => {
    loading = r;
  });
  const journal = {
    hostsState: async (hosts: string[]) => {
      loading();
      await held;
      return hosts.map((h) => ({ host: { host: h, record: { value: 'online', context: {} }, drivers: [], devices: [] }, records: new Map() }));
    },
  } as unknown as FencedJournal;
  const hosts = new Map<string, unknown>();
  const conductor: RoutedConductor = {
    hasHost: (h) => hosts.has(h),
    adoptHost: (h) => void hosts.set(h.host, h),
    releaseHost: (h) => hosts.delete(h),
    reportStats: () => ({ misaddressedReports: 0, refusedReports: 0 }),
  };
  const router = new HostRouter({ bus: {} as never, conductor, lease, journal, log, forwardTimeoutMs: 1_000 });
  return { router, hosts, release, loadStarted };
}

describe('host router', () => {
  it('holds a report for a host taken over until the host is rebuilt from the database', async () => {
    const { router, hosts, release, loadStarted } = setup();
    const takeover = router.takeOver(['node-1']);
    await loadStarted; // the claim is won; the rebuild's load is held
    let routed = false;
    const report = Promise.resolve(router.route('node-1')).then((r) => {
      routed = true;
      return r;
    });
    // A whole turn of the event loop: a report not held back would have been routed by now.
    await new Promise((r) => setImmediate(r));
    expect(routed).toBe(false);
    expect(hosts.has('node-1')).toBe(false);
    release();
    expect(await report).toEqual({ mine: true });
    expect(hosts.has('node-1')).toBe(true);
    await takeover;
  });
  it('holds an api call about a host taken over until the host is rebuilt (else: accelerator not found)', async () => {
    const { router, hosts, release, loadStarted } = setup();
    const takeover = router.takeOver(['node-2']);
    await loadStarted;
    let served = false;
    const call = router.settled('node-2').then(() => {
      served = hosts.has('node-2');
    });
    await new Promise((r) => setImmediate(r));
    expect(served).toBe(false);
    release();
    await call;
    expect(served).toBe(true);
    await takeover;
    // Nothing to wait for once rebuilt, or for a host not being taken over.
    await router.settled('node-2');
    await router.settled('node-elsewhere');
  });
  it('stops the actors of the hosts whose lease moved away, and only those', async () => {
    const { router, hosts, release } = setup();
    release();
    await router.takeOver(['node-3', 'node-4']);
    router.release(['node-3', 'node-never-here']);
    expect([...hosts.keys()]).toEqual(['node-4']);
  });
});
