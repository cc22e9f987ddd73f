import { BASE, session } from './auth.js';
import type { AcceleratorUsage, AcceleratorView, AuditEntry, DrainView, HostUsage, Machines, Snapshot, TransitionRecord } from './types.js';

export { BASE };

/** An API error with the server's code and message (409 carries the state and allowed events). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** How the page words a failed call: the API's status, code and message, or the error itself. */
export function describeError(err: unknown): string {
  return err instanceof ApiError ? `${err.status} ${err.code}: ${err.message}` : String(err);
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await fetch(`${BASE}${path}`, {
    ...init,
    headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}), ...session.headers(), ...init?.headers },
  });
  // The token expired or was revoked mid-session: back to the sign-in form.
  if (res.status === 401) session.expired();
  const text = await res.text();
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (!res.ok) throw new ApiError(res.status, String(body.code ?? res.status), String(body.message ?? body.error_message ?? res.statusText));
  return body as T;
}

export const api = {
  snapshot: () => call<Snapshot>('/snapshot'),
  machines: () => call<Machines>('/machines'),
  history: (id: string) => call<{ transitions: TransitionRecord[] }>(`/history/${encodeURIComponent(id)}?limit=200`).then((r) => r.transitions),
  /** Sends an operator event through its POST route (`ENABLE` → `/accelerators/:id/enable`). */
  /** Health and maintenance actions (api/routes/maintenance.ts): POST sets, DELETE cancels a mark. */
  service: (id: string, action: 'maintenance' | 'reset' | 'clear-health', method: 'POST' | 'DELETE' = 'POST') =>
    call<AcceleratorView>(`/accelerators/${encodeURIComponent(id)}/${action}`, { method, ...(method === 'POST' ? { body: '{}' } : {}) }),
  /** A host's drain (api/routes/maintenance.ts): POST starts it, DELETE cancels it. */
  drain: (host: string, method: 'POST' | 'DELETE') =>
    call<DrainView>(`/hosts/${encodeURIComponent(host)}/drain`, { method, ...(method === 'POST' ? { body: '{}' } : {}) }),
  /** The conductor's in-memory usage window (api/routes/usage.ts). */
  usage: (id: string) => call<AcceleratorUsage>(`/accelerators/${encodeURIComponent(id)}/usage`),
  hostUsage: (host: string) => call<HostUsage>(`/hosts/${encodeURIComponent(host)}/usage`),
  /**
   * A page of the fleet's audit log, newest first: the filters given, or the previous page's
   * `next` (a path under the API, as the server wrote it).
   */
  audit: (filters: Record<string, string>, next?: string) => {
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ''));
    q.set('limit', '50');
    return call<{ audit: AuditEntry[]; next?: string }>(next ? next.slice(BASE.length) : `/audit?${q.toString()}`);
  },
  /** What each project holds, with Keystone's name of each where the api knows it (api/routes/usage.ts). */
  projects: () => call<{ projects: { projectId: string; projectName?: string }[] }>('/projects').then((r) => r.projects),
  act: (id: string, event: string, body: Record<string, string> = {}) =>
    call<AcceleratorView>(`/accelerators/${encodeURIComponent(id)}/${event.toLowerCase()}`, { method: 'POST', body: JSON.stringify(body) }),
};
