import { eventLabel } from '../../../api/routes/machine-graph.js';
import type { StreamEvent } from '../types.js';

export interface FeedProps {
  events: StreamEvent[];
  names: (id: string) => string | undefined;
  onSelect: (id: string) => void;
}

/** The latest committed transitions, newest first, failures in red, each with who asked: what just happened. */
export function Feed({ events, names, onSelect }: FeedProps) {
  const latest = events.slice(-8).reverse();
  return (
    <section class="feed" data-testid="feed">
      <h2>Just now</h2>
      {latest.length === 0 && <p class="muted">no transition since the page was loaded</p>}
      <ol>
        {latest.map((e) => (
          <li key={e.seq} class={e.to === 'error' || /Failed$/.test(e.to) ? 'bad' : ''}>
            <time>{e.at.slice(11, 19)}</time>
            {e.kind === 'accelerator'
              ? <button type="button" class="link" onClick={() => onSelect(e.id)}>{names(e.id) ?? e.id.slice(0, 8)}</button>
              : <span>{e.kind} {e.kind === 'host' ? e.id : e.id.slice(0, 8)}</span>}
            <span>{e.from} → <b>{e.to}</b></span>
            <span class="muted">{eventLabel(e.event)}{e.reason ? ` · ${e.reason}` : ''}{e.actor ? ` · by ${e.actor}` : ''}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
