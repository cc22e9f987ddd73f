import { useState } from 'preact/hooks';
import { api, describeError } from '../api.js';
import { session } from '../auth.js';
import type { HostSummary } from '../select.js';
import type { HostView } from '../types.js';
import { HostUsagePanel } from './usage.js';

export interface HostPanelProps {
  host: HostView;
  summary: HostSummary;
}

/**
 * The host the list is narrowed to: its liveness, its drain (how many devices instances still
 * hold), drain and cancel, each asked twice, and its devices' usage together.
 */
export function HostPanel({ host, summary }: HostPanelProps) {
  const [asking, setAsking] = useState<'POST' | 'DELETE' | null>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const send = async (method: 'POST' | 'DELETE'): Promise<void> => {
    setBusy(true);
    setOutcome(null);
    try {
      const d = await api.drain(host.name, method);
      setOutcome({
        ok: true,
        text:
          method === 'POST' ? `drain started (${d.state === 'drained' ? 'nothing held: drained at once' : 'instances still hold devices'})` : 'drain cancelled',
      });
    } catch (err) {
      setOutcome({ ok: false, text: describeError(err) });
    } finally {
      setBusy(false);
      setAsking(null);
    }
  };
  const draining = summary.drain !== 'none';
  const may = draining ? session.may('cyborg:operator:host:drain_cancel') : session.may('cyborg:operator:host:drain');
  const method = draining ? 'DELETE' : 'POST';
  return (
    <section class="hostpanel" data-testid="host-panel" data-host={host.name} data-drain={summary.drain}>
      <h3>
        {host.name} <span class={`dot ${host.state}`} />{' '}
        <span class="muted">
          {host.state} · {host.accelerators} accelerators
        </span>
      </h3>
      <p data-testid="drain-state">
        {summary.drain === 'none' && <span class="muted">not drained</span>}
        {summary.drain === 'draining' && <span class="warn">draining: {summary.held} device(s) still held by instances; nothing new is bound here</span>}
        {summary.drain === 'drained' && <span>drained: no instance holds a device; nothing new is bound here</span>}
        {summary.unhealthy > 0 && <span class="error"> · {summary.unhealthy} unhealthy device(s)</span>}
      </p>
      {may && !asking && (
        <button type="button" class="action" disabled={busy} data-host-action={draining ? 'cancel-drain' : 'drain'} onClick={() => setAsking(method)}>
          {draining ? 'cancel drain' : 'drain host'}
        </button>
      )}
      {asking && (
        <span class="confirm-inline" data-testid="drain-confirm">
          {asking === 'POST'
            ? `Mark every device of ${host.name} for maintenance? Attached instances keep running.`
            : `Return the devices of ${host.name} to service?`}{' '}
          <button type="button" class="action primary" onClick={() => void send(asking)} data-confirm="yes">
            yes
          </button>{' '}
          <button type="button" class="link" onClick={() => setAsking(null)}>
            no
          </button>
        </span>
      )}
      {busy && <span class="muted"> working…</span>}
      {outcome && (
        <p class={outcome.ok ? 'ok' : 'error'} data-testid="drain-outcome">
          {outcome.text}
        </p>
      )}
      <HostUsagePanel host={host.name} />
    </section>
  );
}
