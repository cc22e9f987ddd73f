import type { Row } from '../select.js';
import { healthOf, projectsOf, serviceOf } from '../select.js';
import type { AcceleratorView } from '../types.js';
import { VirtualList } from './virtual-list.js';

export interface AcceleratorListProps {
  rows: Row[];
  selected: string;
  onSelect: (id: string) => void;
  onToggleGroup: (state: string) => void;
  /** A holder's project as people know it (Keystone's name, else the id). */
  projectLabel: (id: string) => string;
}

/** Accelerators grouped by state, virtualized: stays smooth at 10,000 rows. */
export function AcceleratorList({ rows, selected, onSelect, onToggleGroup, projectLabel }: AcceleratorListProps) {
  return (
    <VirtualList
      items={rows}
      rowHeight={32}
      class="accelerators"
      testId="accelerators"
      keyOf={(r) => (r.type === 'group' ? `g:${r.state}` : r.a.id)}
      render={(r) =>
        r.type === 'group' ? (
          <button type="button" class={`group state-${r.state}`} onClick={() => onToggleGroup(r.state)} data-group={r.state}>
            <span class="caret">{r.collapsed ? '▸' : '▾'}</span> {r.state} <span class="muted">{r.count}</span>
          </button>
        ) : (
          <Line a={r.a} selected={r.a.id === selected} onSelect={onSelect} projectLabel={projectLabel} />
        )
      }
    />
  );
}

/** The characters of a name always shown, whatever the column's width. */
const NAME_TAIL = 10;

function Line({
  a,
  selected,
  onSelect,
  projectLabel,
}: {
  a: AcceleratorView;
  selected: boolean;
  onSelect: (id: string) => void;
  projectLabel: (id: string) => string;
}) {
  const holders = a.allocations.length;
  const projects = projectsOf(a);
  const health = healthOf(a);
  const service = serviceOf(a);
  return (
    <button
      type="button"
      class={`acc ${selected ? 'selected' : ''}`}
      onClick={() => onSelect(a.id)}
      data-id={a.id}
      data-name={a.name}
      data-state={a.state}
      data-health={health}
      data-service={service}
    >
      <span class={`badge state-${a.state}`}>{a.state}</span>
      <span class="marks">
        {health !== 'ok' && (
          <span class={`mark health-${health}`} title={a.health?.reason ?? health}>
            {health === 'quarantined' ? '✖' : '⚠'}
          </span>
        )}
        {(service === 'draining' || service === 'maintenance') && (
          <span class={`mark service-${service}`} title={service}>
            {service === 'draining' ? '⇣' : '⚙'}
          </span>
        )}
      </span>
      {/* Cut in the middle, its end kept: names of one host differ at the end (`…_gpu_40`, `…_gpu_41`),
          and cut at the end they read the same (issue 42). */}
      <span class="name" title={`${a.name} (${a.id})`}>
        <span class="head">{a.name.slice(0, -NAME_TAIL)}</span>
        <span class="tail">{a.name.slice(-NAME_TAIL)}</span>
      </span>
      <span class="kind">{a.deviceType}</span>
      <span class="host muted">{a.host}</span>
      <span class="holders muted" title={projects.join(', ')}>
        {holders > 0 ? `${holders}/${a.capacity} held${projects.length ? ` · ${projectLabel(projects[0]!)}` : ''}` : a.error ? `⚠ ${a.error.op}` : ''}
      </span>
    </button>
  );
}
