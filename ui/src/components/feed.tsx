import { useEffect, useState } from 'preact/hooks';
import { eventLabel, isFailureState } from '../../../machines/index.js';
import { api, describeError } from '../api.js';
import { session } from '../auth.js';
import type { AuditEntry, StreamEvent } from '../types.js';

export interface FeedProps {
  events: StreamEvent[];
  names: (id: string) => string | undefined;
  onSelect: (id: string) => void;
  /** The host the list is narrowed to: the audit log follows it. */
  host: string;
}

type Line = Pick<StreamEvent, 'kind' | 'id' | 'event' | 'from' | 'to' | 'at' | 'actor' | 'actorName' | 'projectName' | 'reason' | 'args' | 'host'> & {
  key: string | number;
};

/**
 * What happened, two ways: the latest committed transitions live from the event stream ("just
 * now"), or the fleet's audit log from the database — every transition and operator or driver
 * action with who asked, filtered by the host picked, a user and an action, older pages on demand.
 */
export function Feed({ events, names, onSelect, host }: FeedProps) {
  const [tab, setTab] = useState<'live' | 'audit'>('live');
  const mayAudit = session.may('cyborg:operator:audit:get_all');
  return (
    <section class={`feed ${tab}`} data-testid="feed">
      <h2>
        <button type="button" class={`tab ${tab === 'live' ? 'selected' : ''}`} onClick={() => setTab('live')}>
          Just now
        </button>
        {mayAudit && (
          <button type="button" class={`tab ${tab === 'audit' ? 'selected' : ''}`} onClick={() => setTab('audit')} data-testid="audit-tab">
            Audit log
          </button>
        )}
      </h2>
      {tab === 'live' ? <Live events={events} names={names} onSelect={onSelect} /> : <Audit host={host} names={names} onSelect={onSelect} />}
    </section>
  );
}

function Live({ events, names, onSelect }: Omit<FeedProps, 'host'>) {
  const latest = events.slice(-8).reverse();
  if (latest.length === 0) return <p class="muted">no transition since the page was loaded</p>;
  return <Lines lines={latest.map((e) => ({ ...e, key: e.seq }))} names={names} onSelect={onSelect} />;
}

function Audit({ host, names, onSelect }: { host: string; names: FeedProps['names']; onSelect: FeedProps['onSelect'] }) {
  const [user, setUser] = useState('');
  const [action, setAction] = useState('');
  const [rows, setRows] = useState<AuditEntry[]>([]);
  const [next, setNext] = useState<string | undefined>();
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(false);
  const load = async (more: boolean): Promise<void> => {
    setLoading(true);
    try {
      const page = await api.audit({ host, user: user.trim(), action: action.trim() }, more ? next : undefined);
      setRows((r) => (more ? [...r, ...page.audit] : page.audit));
      setNext(page.next);
      setError('');
    } catch (err) {
      setError(describeError(err));
    } finally {
      setLoading(false);
    }
  };
  // A new host, user or action starts from the newest row again (typing settles first).
  useEffect(() => {
    const t = setTimeout(() => void load(false), 250);
    return () => clearTimeout(t);
  }, [host, user, action]);
  return (
    <div data-testid="audit">
      <div class="audit-filters">
        <span class="muted">{host ? `host ${host}` : 'every host'}</span>
        <input
          type="search"
          placeholder="user (name or id, agent:…, conductor)"
          value={user}
          onInput={(e) => setUser(e.currentTarget.value)}
          aria-label="audit user"
          data-testid="audit-user"
        />
        <input
          type="search"
          placeholder="action (enable, maintain, install…)"
          value={action}
          onInput={(e) => setAction(e.currentTarget.value)}
          aria-label="audit action"
          data-testid="audit-action"
        />
        <button type="button" class="link" onClick={() => void load(false)}>
          refresh
        </button>
      </div>
      {error && <p class="error">{error}</p>}
      {!error && rows.length === 0 && !loading && <p class="muted">nothing in the log matches</p>}
      <Lines lines={rows.map((r) => ({ ...r, key: r.seq }))} names={names} onSelect={onSelect} withDate />
      {next && (
        <button type="button" class="link" disabled={loading} onClick={() => void load(true)} data-testid="audit-older">
          older…
        </button>
      )}
    </div>
  );
}

/** Who asked, as people know them: Keystone's user and project names where the row kept them, else the id. */
function who(e: Line): string {
  const user = e.actorName ?? e.actor ?? '';
  return e.projectName ? `${user} (${e.projectName})` : user;
}

function Lines({
  lines,
  names,
  onSelect,
  withDate = false,
}: {
  lines: Line[];
  names: FeedProps['names'];
  onSelect: FeedProps['onSelect'];
  withDate?: boolean;
}) {
  return (
    <ol>
      {lines.map((e) => (
        <li key={e.key} class={isFailureState(e.to) ? 'bad' : ''} data-event={e.event} data-actor={e.actor ?? ''}>
          <time title={e.at}>{withDate ? e.at.slice(5, 19).replace('T', ' ') : e.at.slice(11, 19)}</time>
          {e.kind === 'accelerator' ? (
            <button type="button" class="link" onClick={() => onSelect(e.id)}>
              {names(e.id) ?? e.id.slice(0, 8)}
            </button>
          ) : (
            <span>
              {e.kind} {e.kind === 'host' || e.kind === 'driver' ? e.id : e.id.slice(0, 8)}
            </span>
          )}
          <span>
            {e.from} → <b>{e.to}</b>
          </span>
          <span class="muted">
            {eventLabel(e.event)}
            {e.args
              ? ` ${Object.entries(e.args)
                  .map(([k, v]) => `${k}=${String(v)}`)
                  .join(' ')}`
              : ''}
            {e.reason ? ` · ${e.reason}` : ''}
            {e.actor ? (
              <>
                {' '}
                · by{' '}
                <span class="actor" title={e.actor}>
                  {who(e)}
                </span>
              </>
            ) : (
              ''
            )}
          </span>
        </li>
      ))}
    </ol>
  );
}
