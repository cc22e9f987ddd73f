import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from './api.js';
import { AcceleratorList } from './components/list.js';
import { Detail } from './components/detail.js';
import { Feed } from './components/feed.js';
import { FacetChips, FilterBar, StateChips } from './components/filters.js';
import { HostPanel } from './components/host-panel.js';
import { CapacityPanel } from './components/capacity.js';
import { Hosts } from './components/hosts.js';
import { Who } from './components/signin.js';
import { baseOrder, hostSummaries, NO_FILTERS, projectsOf, select, summaryOf, type Filters } from './select.js';
import type { Store } from './store.js';
import type { Machines } from './types.js';

/** Re-renders on store changes, at most once per animation frame (the store batches). */
function useStoreVersion(store: Store): number {
  const [version, setVersion] = useState(store.version);
  useEffect(() => store.subscribe(() => setVersion(store.version)), [store]);
  return version;
}

/** The selected accelerator lives in the URL hash, so a reload or a shared link keeps it. */
function useSelection(): [string, (id: string) => void] {
  const read = (): string => decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  const [id, setId] = useState(read);
  useEffect(() => {
    const on = (): void => setId(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return [
    id,
    (next) => {
      location.hash = next ? `/${encodeURIComponent(next)}` : '';
    },
  ];
}

export function App({ store }: { store: Store }) {
  const version = useStoreVersion(store);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [selected, select_] = useSelection();
  const [machines, setMachines] = useState<Machines | null>(null);
  useEffect(() => {
    api.machines().then(setMachines, () => undefined);
  }, []);
  // Measured after the render is on screen: the latency of what this render showed.
  useEffect(() => store.rendered(), [version, store]);

  const stateOrder = useMemo(() => machines?.accelerator.states.map((s) => s.id) ?? [], [machines]);
  const order = useMemo(() => baseOrder(store.accelerators.values()), [store.membership, store]);
  const view = useMemo(() => select(order, store.accelerators, filters, stateOrder, collapsed), [order, version, filters, stateOrder, collapsed, store]);
  const hosts = useMemo(() => [...store.hosts.values()].sort((x, y) => x.name.localeCompare(y.name)), [version, store]);
  const summaries = useMemo(() => hostSummaries(store.accelerators.values()), [version, store]);
  const capacityInput = useMemo(() => [...store.accelerators.values()], [version, store]);
  const filteredHost = filters.host ? store.hosts.get(filters.host) : undefined;
  const pickers = useMemo(() => {
    const kinds = new Set<string>();
    const projects = new Set<string>();
    for (const a of store.accelerators.values()) {
      kinds.add(a.deviceType);
      for (const p of projectsOf(a)) projects.add(p);
    }
    return { kinds: [...kinds].sort(), projects: [...projects].sort() };
  }, [version, store]); // one pass, as the selection's: a project appears with its first allocation

  const current = selected ? store.accelerators.get(selected) : undefined;
  const toggleGroup = (s: string): void => {
    const next = new Set(collapsed);
    if (!next.delete(s)) next.add(s);
    setCollapsed(next);
  };
  return (
    <div class="app">
      <header class="top">
        <h1>
          cyborg <span class="muted">accelerators</span>
        </h1>
        <span class="muted">
          {store.accelerators.size} accelerators · {store.hosts.size} hosts · {view.shown} shown
        </span>
        <Connection store={store} />
        <Who />
      </header>
      <Hosts hosts={hosts} summaries={summaries} selected={filters.host} onSelect={(h) => setFilters({ ...filters, host: h })} />
      <main class="center">
        {filteredHost && <HostPanel key={filteredHost.name} host={filteredHost} summary={summaryOf(summaries, filteredHost.name)} />}
        <CapacityPanel accelerators={capacityInput} host={filters.host} />
        <StateChips counts={view.counts} order={stateOrder} selected={filters.state} onSelect={(s) => setFilters({ ...filters, state: s })} />
        <FacetChips healthCounts={view.healthCounts} serviceCounts={view.serviceCounts} filters={filters} onChange={setFilters} />
        <FilterBar
          filters={filters}
          hosts={hosts.map((h) => h.name)}
          kinds={pickers.kinds}
          projects={pickers.projects}
          projectLabel={(id) => store.projectLabel(id)}
          onChange={setFilters}
        />
        <AcceleratorList rows={view.rows} selected={selected} onSelect={select_} onToggleGroup={toggleGroup} projectLabel={(id) => store.projectLabel(id)} />
        <Feed events={store.recent} names={(id) => store.accelerators.get(id)?.name} onSelect={select_} host={filters.host} />
      </main>
      <aside class="side">
        {current ? (
          <Detail key={current.id} store={store} a={current} host={store.hosts.get(current.host)} arqs={store.arqs} machines={machines} />
        ) : (
          <p class="muted hint">
            {selected ? `accelerator ${selected} is gone` : 'Select an accelerator to see its machine, its history and what can be done with it.'}
          </p>
        )}
      </aside>
    </div>
  );
}

function Connection({ store }: { store: Store }) {
  const label = store.connection === 'live' ? 'live' : store.connection === 'connecting' ? 'connecting…' : 'disconnected';
  return (
    <span class={`conn ${store.connection}`} data-testid="connection" data-state={store.connection} title={store.lastError || `cursor ${store.cursor}`}>
      <span class="dot" /> {label}
      {store.connection === 'lost' && store.lastError ? ` — ${store.lastError}` : ''}
    </span>
  );
}
