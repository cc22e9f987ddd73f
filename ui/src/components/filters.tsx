import { HEALTHS, NO_FILTERS, SERVICES, type Filters } from '../select.js';

export interface FilterBarProps {
  filters: Filters;
  hosts: string[];
  kinds: string[];
  projects: string[];
  /** A project as people know it (Keystone's name, else the id); the filter keeps the id. */
  projectLabel: (id: string) => string;
  onChange: (f: Filters) => void;
}

/** Host, kind and project pickers and free-text search (name, uuid, host, instance, handle, ARQ). */
export function FilterBar({ filters, hosts, kinds, projects, projectLabel, onChange }: FilterBarProps) {
  const set = (k: keyof Filters) => (e: Event) => onChange({ ...filters, [k]: (e.currentTarget as HTMLInputElement | HTMLSelectElement).value });
  const any = Object.values(filters).some((v) => v !== '');
  return (
    <div class="filters">
      <input type="search" placeholder="Search name, uuid, host, instance…" value={filters.q} onInput={set('q')} aria-label="search" data-testid="search" />
      <Picker label="host" value={filters.host} options={hosts} onChange={set('host')} />
      <Picker label="kind" value={filters.kind} options={kinds} onChange={set('kind')} />
      <Picker label="project" value={filters.project} options={projects} labelOf={projectLabel} onChange={set('project')} />
      {any && (
        <button type="button" class="link" onClick={() => onChange(NO_FILTERS)}>
          clear filters
        </button>
      )}
    </div>
  );
}

function Picker(props: { label: string; value: string; options: string[]; labelOf?: (o: string) => string; onChange: (e: Event) => void }) {
  return (
    <select value={props.value} onChange={props.onChange} aria-label={props.label} data-testid={`filter-${props.label}`}>
      <option value="">any {props.label}</option>
      {props.options.map((o) => (
        <option key={o} value={o} title={o}>
          {props.labelOf?.(o) ?? o}
        </option>
      ))}
    </select>
  );
}

export interface StateChipsProps {
  counts: Map<string, number>;
  order: string[];
  selected: string;
  onSelect: (state: string) => void;
}

/** Accelerators per state, in lifecycle order; a click narrows the list to one state. */
export function StateChips({ counts, order, selected, onSelect }: StateChipsProps) {
  const states = [...order.filter((s) => counts.has(s)), ...[...counts.keys()].filter((s) => !order.includes(s))];
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return (
    <div class="chips" data-testid="state-counts">
      <button type="button" class={`chip ${selected === '' ? 'selected' : ''}`} onClick={() => onSelect('')}>
        all <b>{total}</b>
      </button>
      {states.map((s) => (
        <button
          type="button"
          key={s}
          class={`chip state-${s} ${selected === s ? 'selected' : ''}`}
          onClick={() => onSelect(selected === s ? '' : s)}
          data-state={s}
        >
          {s} <b>{counts.get(s)}</b>
        </button>
      ))}
    </div>
  );
}

export interface FacetChipsProps {
  healthCounts: Map<string, number>;
  serviceCounts: Map<string, number>;
  filters: Filters;
  onChange: (f: Filters) => void;
}

/**
 * Health (ok / degraded / quarantined) and service (in service / out of service / draining / maintenance) at a
 * glance, each count what a click on it shows; what is out of service stands out when not zero.
 */
export function FacetChips({ healthCounts, serviceCounts, filters, onChange }: FacetChipsProps) {
  const chip = (facet: 'health' | 'service', value: string, count: number, bad: boolean) => (
    <button
      type="button"
      key={value}
      data-facet={facet}
      data-value={value}
      class={`chip facet ${bad && count > 0 ? 'alarm' : ''} ${filters[facet] === value ? 'selected' : ''}`}
      onClick={() => onChange({ ...filters, [facet]: filters[facet] === value ? '' : value })}
    >
      {value} <b>{count}</b>
    </button>
  );
  return (
    <div class="chips facets" data-testid="facet-counts">
      <span class="muted">health</span>
      {HEALTHS.map((h) => chip('health', h, healthCounts.get(h) ?? 0, h !== 'ok'))}
      <span class="muted sep">service</span>
      {SERVICES.map((m) => chip('service', m, serviceCounts.get(m) ?? 0, m !== 'in service'))}
    </div>
  );
}
