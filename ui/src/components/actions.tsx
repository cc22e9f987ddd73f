import { useLayoutEffect, useState } from 'preact/hooks';
import { api, describeError } from '../api.js';
import { session } from '../auth.js';
import type { AcceleratorView } from '../types.js';

/** What an operator event needs asked before it is sent (everything else needs only a yes). */
interface Field {
  name: string;
  label: string;
  required: boolean;
  initial: (a: AcceleratorView) => string;
  options?: (a: AcceleratorView) => string[];
}

const FIELDS: Record<string, Field[]> = {
  PROGRAM: [{ name: 'bitstreamId', label: 'bitstream id', required: true, initial: (a) => a.program?.bitstreamId ?? '' }],
  ATTACH: [
    { name: 'instanceUuid', label: 'instance uuid', required: true, initial: () => crypto.randomUUID() },
    { name: 'projectId', label: 'project id (optional)', required: false, initial: () => '' },
  ],
  DETACH: [
    {
      name: 'handleUuid',
      label: 'attach handle',
      required: true,
      initial: (a) => a.allocations[0]?.handleUuid ?? '',
      options: (a) => a.allocations.map((x) => x.handleUuid),
    },
  ],
};

/**
 * The operator events the machine accepts now (the view's `allowed`, asked of the machine by the
 * conductor), one button each; every one asks for confirmation, and for its parameters, first.
 */
export function Actions({ a }: { a: AcceleratorView }) {
  const [asking, setAsking] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const send = async (event: string, body: Record<string, string>): Promise<void> => {
    setBusy(true);
    setOutcome(null);
    try {
      const v = await api.act(a.id, event, body);
      setOutcome({ ok: true, text: `${event.toLowerCase()}: now ${v.state}` });
    } catch (err) {
      setOutcome({ ok: false, text: describeError(err) });
    } finally {
      setBusy(false);
      setAsking(null);
    }
  };
  // What the machine accepts now, less what the policy does not let this user do.
  const offered = a.allowed.filter((ev) => session.may(`cyborg:operator:accelerator:${ev.toLowerCase()}`));
  return (
    <>
      <div class="actions" data-testid="actions">
        {a.allowed.length === 0 && (
          <span class="muted">{a.tags.includes('busy') ? 'a driver operation is running…' : 'no operator action is allowed in this state'}</span>
        )}
        {a.allowed.length > 0 && offered.length === 0 && (
          <span class="muted" data-testid="actions-not-permitted">
            your roles allow none of this state's actions
          </span>
        )}
        {offered.map((ev) => (
          <button type="button" key={ev} class="action" disabled={busy} data-action={ev} onClick={() => setAsking(ev)}>
            {ev.toLowerCase()}
          </button>
        ))}
        {busy && <span class="muted"> working…</span>}
        {outcome && (
          <p class={outcome.ok ? 'ok' : 'error'} data-testid="action-outcome">
            {outcome.text}
          </p>
        )}
        {asking && <Confirm a={a} event={asking} onCancel={() => setAsking(null)} onConfirm={(body) => void send(asking, body)} />}
      </div>
      <Service a={a} />
    </>
  );
}

/**
 * Health and the maintenance mark, beside the lifecycle: what holds the device out of service
 * and the operator's ways back (mark / cancel, reset, clear health).
 */
function Service({ a }: { a: AcceleratorView }) {
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const h = a.health;
  const m = a.maintenance;
  const run = async (label: string, action: 'maintenance' | 'reset' | 'clear-health', method: 'POST' | 'DELETE' = 'POST'): Promise<void> => {
    if (!confirm(`${label} ${a.name}?`)) return;
    try {
      const v = await api.service(a.id, action, method);
      setOutcome({ ok: true, text: `${label}: health ${v.health?.status ?? 'ok'}, ${v.maintenance ? v.maintenance.mark : 'in service'}` });
    } catch (err) {
      setOutcome({ ok: false, text: describeError(err) });
    }
  };
  const unhealthy = h && h.status !== 'ok';
  // No maintenance mark is not "in service" for a card its health keeps out (reserved in Placement).
  const unmarked = a.health?.status === 'quarantined' ? 'out of service: quarantined' : 'in service';
  const may = (action: string): boolean => session.may(`cyborg:operator:accelerator:${action}`);
  return (
    <div class="service" data-testid="service">
      <p>
        <span class={unhealthy ? 'error' : 'ok'} data-testid="health">
          health {h?.status ?? 'ok'}
          {h?.fatal ? ' (fatal)' : ''}
          {h?.reason ? `: ${h.reason}` : ''}
        </span>
        {' · '}
        <span data-testid="mark">
          {m ? `${m.mark} (${m.scopes.join(' + ')})${m.consumers.length ? `: ${m.consumers.map((c) => c.instanceUuid).join(', ')} left` : ''}` : unmarked}
        </span>
      </p>
      {m?.scopes.includes('device')
        ? may('maintenance_cancel') && (
            <button type="button" class="action" data-service="END_MAINTENANCE" onClick={() => void run('end maintenance of', 'maintenance', 'DELETE')}>
              end maintenance
            </button>
          )
        : may('maintenance') && (
            <button type="button" class="action" data-service="MAINTAIN" onClick={() => void run('mark for maintenance', 'maintenance')}>
              maintenance
            </button>
          )}
      {unhealthy && may('reset') && (
        <button type="button" class="action" data-service="RESET" onClick={() => void run('reset', 'reset')}>
          reset
        </button>
      )}
      {unhealthy && may('clear_health') && (
        <button type="button" class="action" data-service="CLEAR_HEALTH" onClick={() => void run('clear health of', 'clear-health')}>
          clear health
        </button>
      )}
      {outcome && (
        <p class={outcome.ok ? 'ok' : 'error'} data-testid="service-outcome">
          {outcome.text}
        </p>
      )}
    </div>
  );
}

function Confirm({
  a,
  event,
  onCancel,
  onConfirm,
}: {
  a: AcceleratorView;
  event: string;
  onCancel: () => void;
  onConfirm: (body: Record<string, string>) => void;
}) {
  const fields = FIELDS[event] ?? [];
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(fields.map((f) => [f.name, f.initial(a)])));
  const missing = fields.some((f) => f.required && !values[f.name]);
  // Layout effect: listening from the moment the dialog is on screen, not a frame later.
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') onCancel();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [onCancel]);
  const submit = (e: Event): void => {
    e.preventDefault();
    if (!missing) onConfirm(Object.fromEntries(Object.entries(values).filter(([, v]) => v !== '')));
  };
  return (
    <div class="overlay" onClick={onCancel}>
      <form class="dialog" aria-label={`confirm ${event}`} data-testid="confirm" onClick={(e) => e.stopPropagation()} onSubmit={submit}>
        <h3>
          {event.toLowerCase()} {a.name}?
        </h3>
        <p class="muted">
          {a.host} · {a.state} · {a.id}
        </p>
        {fields.map((f) => (
          <label key={f.name}>
            {f.label}
            {f.options ? (
              <select name={f.name} value={values[f.name]} onChange={(e) => setValues({ ...values, [f.name]: (e.currentTarget as HTMLSelectElement).value })}>
                {f.options(a).map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : (
              <input
                name={f.name}
                value={values[f.name]}
                required={f.required}
                onInput={(e) => setValues({ ...values, [f.name]: (e.currentTarget as HTMLInputElement).value })}
              />
            )}
          </label>
        ))}
        <div class="buttons">
          <button type="button" onClick={onCancel}>
            cancel
          </button>
          <button type="submit" class="primary" disabled={missing} data-testid="confirm-yes">
            {event.toLowerCase()}
          </button>
        </div>
      </form>
    </div>
  );
}
