import { useEffect, useState } from 'preact/hooks';
import { eventLabel } from '../../../machines/index.js';
import { api } from '../api.js';
import type { Store } from '../store.js';
import type { AcceleratorView, ArqView, HostView, Machines, TransitionRecord } from '../types.js';
import { Actions } from './actions.js';
import { Statechart } from './chart.js';
import { AcceleratorUsagePanel } from './usage.js';

type Step = Pick<TransitionRecord, 'event' | 'from' | 'to' | 'at' | 'actor' | 'actorName' | 'projectName' | 'reason' | 'requestId'>;

const keyOf = (s: Step): string => `${s.at}|${s.event}|${s.from}|${s.to}`;

/**
 * The committed history of one accelerator: loaded from the transition log, then followed on
 * the event stream (events that arrive while the log loads are merged, not doubled).
 */
function useHistory(store: Store, id: string): { steps: Step[]; error: string } {
  const [steps, setSteps] = useState<Step[]>([]);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    const seen = new Set<string>();
    let acc: Step[] = [];
    const add = (list: Step[]): void => {
      const fresh = list.filter((s) => !seen.has(keyOf(s)));
      for (const s of fresh) seen.add(keyOf(s));
      if (fresh.length === 0) return;
      acc = [...acc, ...fresh].sort((x, y) => x.at.localeCompare(y.at));
      if (live) setSteps(acc);
    };
    setSteps([]);
    setError('');
    const off = store.onEvent((ev) => {
      if (ev.id === id) add([ev]);
    });
    api.history(id).then(add, (err: unknown) => live && setError(String(err)));
    return () => {
      live = false;
      off();
    };
  }, [store, id]);
  return { steps, error };
}

export interface DetailProps {
  store: Store;
  a: AcceleratorView;
  host: HostView | undefined;
  arqs: Map<string, ArqView>;
  machines: Machines | null;
}

/** One accelerator: facts, holders, allowed actions, its statechart and its history. */
export function Detail({ store, a, host, arqs, machines }: DetailProps) {
  const { steps, error } = useHistory(store, a.id);
  const last = steps[steps.length - 1];
  return (
    <section class="detail" data-testid="detail" data-id={a.id}>
      <header>
        <h2>{a.name}</h2>
        <span class={`badge big state-${a.state}`} data-testid="detail-state">
          {a.state}
        </span>
      </header>
      <dl class="facts">
        <dt>uuid</dt>
        <dd class="mono">{a.id}</dd>
        <dt>host</dt>
        <dd>
          {a.host} <span class={`dot ${host?.state ?? 'lost'}`} /> {host?.state ?? 'unknown'}
        </dd>
        <dt>device</dt>
        <dd>
          {a.deviceType} · {a.vendor} {a.model} · driver {a.driver}
        </dd>
        <dt>placement</dt>
        <dd>
          {a.resourceClass ?? '—'} ×{a.capacity} {a.traits.length > 0 && <span class="muted">· {a.traits.join(', ')}</span>}
        </dd>
        {a.program && (
          <>
            <dt>program</dt>
            <dd class="mono">{a.program.bitstreamId ?? a.program.functionId}</dd>
          </>
        )}
        {a.error && (
          <>
            <dt>error</dt>
            <dd class="error">
              {a.error.op}: {a.error.reason}
            </dd>
          </>
        )}
        {a.missing && (
          <>
            <dt>missing</dt>
            <dd class="warn">discovery no longer reports it; kept while held</dd>
          </>
        )}
      </dl>
      <h3>Held by</h3>
      {a.allocations.length === 0 ? (
        <p class="muted">
          nobody ({a.capacity} free attach handle{a.capacity === 1 ? '' : 's'})
        </p>
      ) : (
        <table class="holders" data-testid="holders">
          <thead>
            <tr>
              <th>attach handle</th>
              <th>instance</th>
              <th>ARQ</th>
              <th>project</th>
            </tr>
          </thead>
          <tbody>
            {a.allocations.map((x) => {
              const arq = x.arqUuid ? arqs.get(x.arqUuid) : undefined;
              return (
                <tr key={x.handleUuid}>
                  <td class="mono">{x.handleUuid.slice(0, 8)}</td>
                  <td class="mono" title={x.instanceUuid}>
                    {x.instanceUuid.slice(0, 8)}
                  </td>
                  <td>
                    {x.arqUuid ? (
                      <span title={x.arqUuid}>
                        {x.arqUuid.slice(0, 8)} {arq && <span class={`badge state-${arq.state}`}>{arq.cyborgState}</span>}
                      </span>
                    ) : (
                      <span class="muted">operator</span>
                    )}
                  </td>
                  {/* The project by Keystone's name (learnt by names.ts, the stream carrying ids only), the id on hover. */}
                  <td title={x.projectId ?? ''} data-testid="holder-project">
                    {x.projectId ? (a.projectNames?.[x.projectId] ?? store.projectLabel(x.projectId)) : '—'}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <h3>Actions</h3>
      <Actions a={a} />
      <AcceleratorUsagePanel id={a.id} />
      <h3>Lifecycle</h3>
      {machines ? (
        <Statechart graph={machines.accelerator} current={a.state} allowed={a.allowed} last={last ? { from: last.from, to: last.to } : undefined} />
      ) : (
        <p class="muted">loading the machine…</p>
      )}
      <h3>
        History <span class="muted">{steps.length}</span>
      </h3>
      {error && <p class="error">{error}</p>}
      <ol class="history" data-testid="history">
        {[...steps].reverse().map((s) => (
          <li key={keyOf(s)} data-from={s.from} data-to={s.to}>
            <time title={s.at}>{s.at.slice(11, 23)}</time>
            <span class="step">
              {s.from} → <b>{s.to}</b>
            </span>
            <span class="event" title={s.event}>
              {eventLabel(s.event)}
            </span>
            {/* Who asked as people know them (Keystone's names, kept on the row), the id on hover: the id alone was a uuid. */}
            <span class="muted actor" title={s.actor ?? ''} data-testid="history-actor">
              {s.actorName ? `${s.actorName}${s.projectName ? ` (${s.projectName})` : ''}` : (s.actor ?? '')}
            </span>
            {s.reason && <span class="error">{s.reason}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}
