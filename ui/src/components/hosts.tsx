import { summaryOf, type HostSummary } from '../select.js';
import type { HostView } from '../types.js';
import { VirtualList } from './virtual-list.js';
import { HostStates } from '../../../machines/index.js';

export interface HostsProps {
  hosts: HostView[];
  /** Drains and unhealthy devices per host (select.ts hostSummaries). */
  summaries: Map<string, HostSummary>;
  selected: string;
  onSelect: (host: string) => void;
}

/**
 * Compute hosts with their agents' liveness (online / stale / lost), a drain in progress or done,
 * and how many of their devices are unhealthy; a click filters by host.
 */
export function Hosts({ hosts, summaries, selected, onSelect }: HostsProps) {
  const lost = hosts.filter((h) => h.state !== HostStates.online).length;
  const draining = [...summaries.values()].filter((s) => s.drain === 'draining').length;
  return (
    <section class="hosts" data-testid="hosts">
      <h2>
        Hosts <span class="muted">{hosts.length}</span>
        {lost > 0 && <span class="warn"> · {lost} not online</span>}
        {draining > 0 && (
          <span class="warn" data-testid="hosts-draining">
            {' '}
            · {draining} draining
          </span>
        )}
      </h2>
      <VirtualList
        items={hosts}
        rowHeight={30}
        keyOf={(h) => h.name}
        render={(h) => {
          const s = summaryOf(summaries, h.name);
          return (
            <button
              type="button"
              class={`host ${h.name === selected ? 'selected' : ''}`}
              onClick={() => onSelect(h.name === selected ? '' : h.name)}
              title={`agent ${h.agentId ?? '—'} · epoch ${h.epoch} · last heartbeat ${h.lastHeartbeatAt ?? 'never'}`}
              data-host={h.name}
              data-liveness={h.state}
              data-drain={s.drain}
            >
              <span class={`dot ${h.state}`} />
              <span class="name">{h.name}</span>
              {s.drain !== 'none' && (
                <span class={`drain ${s.drain}`} title={s.drain === 'draining' ? `${s.held} device(s) still held` : 'every device free'}>
                  {s.drain === 'draining' ? `draining ${s.held}` : 'drained'}
                </span>
              )}
              {s.unhealthy > 0 && (
                <span class="sick" title="unhealthy devices">
                  ⚠{s.unhealthy}
                </span>
              )}
              <span class="muted">{h.accelerators}</span>
            </button>
          );
        }}
      />
    </section>
  );
}
