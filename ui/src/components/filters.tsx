import type { Filters } from '../select.js';

export interface FilterBarProps {
  filters: Filters;
  hosts: string[];
  kinds: string[];
  projects: string[];
  onChange: (f: Filters) => void;
}

/** Host, kind and project pickers and free-text search (name, uuid, host, instance, handle, ARQ). */
export function FilterBar({ filters, hosts, kinds, projects, onChange }: FilterBarProps) {
  const set = (k: keyof Filters) => (e: Event) => onChange({ ...filters, [k]: (e.currentTarget as HTMLInputElement | HTMLSelectElement).value });
  const any = filters.host || filters.state || filters.kind || filters.project || filters.q;
  return (
    <div class="filters">
      <input type="search" placeholder="Search name, uuid, host, instance…" value={filters.q} onInput={set('q')} aria-label="search" data-testid="search" />
      <Picker label="host" value={filters.host} options={hosts} onChange={set('host')} />
      <Picker label="kind" value={filters.kind} options={kinds} onChange={set('kind')} />
      <Picker label="project" value={filters.project} options={projects} onChange={set('project')} />
      {any && <button type="button" class="link" onClick={() => onChange({ host: '', state: '', kind: '', project: '', q: '' })}>clear filters</button>}
    </div>
  );
}

function Picker(props: { label: string; value: string; options: string[]; onChange: (e: Event) => void }) {
  return (
    <select value={props.value} onChange={props.onChange} aria-label={props.label} data-testid={`filter-${props.label}`}>
      <option value="">any {props.label}</option>
      {props.options.map((o) => <option key={o} value={o}>{o}</option>)}
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
      <button type="button" class={`chip ${selected === '' ? 'selected' : ''}`} onClick={() => onSelect('')}>all <b>{total}</b></button>
      {states.map((s) => (
        <button type="button" key={s} class={`chip state-${s} ${selected === s ? 'selected' : ''}`} onClick={() => onSelect(selected === s ? '' : s)} data-state={s}>
          {s} <b>{counts.get(s)}</b>
        </button>
      ))}
    </div>
  );
}
