import type { HostView } from '../types.js';
import { VirtualList } from './virtual-list.js';

export interface HostsProps {
  hosts: HostView[];
  selected: string;
  onSelect: (host: string) => void;
}

/** Compute hosts with their agents' liveness (online / stale / lost); a click filters by host. */
export function Hosts({ hosts, selected, onSelect }: HostsProps) {
  const lost = hosts.filter((h) => h.state !== 'online').length;
  return (
    <section class="hosts" data-testid="hosts">
      <h2>
        Hosts <span class="muted">{hosts.length}</span>
        {lost > 0 && <span class="warn"> · {lost} not online</span>}
      </h2>
      <VirtualList
        items={hosts}
        rowHeight={30}
        keyOf={(h) => h.name}
        render={(h) => (
          <button type="button" class={`host ${h.name === selected ? 'selected' : ''}`} onClick={() => onSelect(h.name === selected ? '' : h.name)}
            title={`agent ${h.agentId ?? '—'} · epoch ${h.epoch} · last heartbeat ${h.lastHeartbeatAt ?? 'never'}`} data-host={h.name} data-liveness={h.state}>
            <span class={`dot ${h.state}`} />
            <span class="name">{h.name}</span>
            <span class="muted">{h.accelerators}</span>
          </button>
        )}
      />
    </section>
  );
}
