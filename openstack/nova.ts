import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { ArqView, CommittedEvent, EventHub } from '../model/index.js';
import { authMethod, KeystoneSession } from './keystone/index.js';
import { globalRequestId, globalRequestIdHeader, withGlobalRequestId } from './request-id.js';
import { ArqStates } from '../machines/index.js';

/** One Nova external event (compute API 2.82). */
export interface NovaEvent {
  name: 'accelerator-request-bound';
  server_uuid: string;
  tag: string;
  status: 'completed' | 'failed';
}

export interface NovaNotifierOptions {
  /** Nova's compute endpoint (e.g. `http://nova:8774/v2.1`); none: no events are sent. */
  novaUrl?: string;
  /** Fixed-token mode: sent as X-Auth-Token (noauth Nova reads `admin` / `user:project`). */
  token: string;
  /** Keystone mode: the service user's session (its token and a service token; Nova's endpoint from the catalog unless novaUrl is set). */
  session?: KeystoneSession;
  retries: number;
  retryDelayMs: number;
  hub: EventHub;
  getArq: (uuid: string) => ArqView;
  /** The instance's ARQs (the conductor's `listArqs({ instanceUuid })`): an instance's results wait for its last bind. */
  arqsOfInstance?: (instanceUuid: string) => ArqView[];
  /** How long an instance's results wait for its other binds at most (a bind that never resolves); default 60 s. */
  holdMs?: number;
  log: Logger;
}

/** Bound → completed; BindFailed (and Deleting) → failed: Cyborg's mapping. */
const STATUS: Record<string, NovaEvent['status']> = { Bound: 'completed', BindFailed: 'failed', Deleting: 'failed' };

/**
 * Tells Nova when ARQ binds resolve: `POST /os-server-external-events` with one
 * `accelerator-request-bound` event per ARQ (tag = ARQ uuid). It listens to committed
 * transitions, so an event never precedes the commit of the bind it announces. An instance's
 * results go together, as Cyborg's own notify_binding sends them: each waits until no other ARQ
 * of its instance is still binding (`holdMs` at most), and what is ready in the same tick goes
 * out in one request. Failures are retried with exponential backoff; every attempt logs a line.
 */
export class NovaNotifier {
  private unsubscribe: (() => void) | undefined;
  private batch: NovaEvent[] = [];
  /** The request the batch's binds were made for (the first one's: one PATCH binds them all). */
  private batchRequestId: string | undefined;
  private scheduled = false;
  /** Results of instances some of whose ARQs are still binding, and the timer that sends them anyway. */
  private readonly held = new Map<string, { events: NovaEvent[]; timer: NodeJS.Timeout }>();
  private readonly inflight = new Set<Promise<void>>();
  /** Pending retry waits: stop() ends them at once. */
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  private stopped = false;

  constructor(private readonly opts: NovaNotifierOptions) {}

  start(): this {
    if (!this.opts.novaUrl && !this.opts.session) {
      this.opts.log.info('no Nova endpoint configured (novaUrl / NOVA_URL): accelerator-request-bound events are not sent');
      return this;
    }
    this.unsubscribe = this.opts.hub.subscribe((ev) => this.onEvent(ev));
    this.opts.log.info({ novaUrl: this.opts.novaUrl ?? 'from the Keystone catalog', keystone: Boolean(this.opts.session) }, 'Nova notifier started');
    return this;
  }

  /** Stops listening and cancels pending retries; waits for requests already on the wire. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    for (const h of this.held.values()) clearTimeout(h.timer);
    this.held.clear();
    for (const [t, wake] of this.timers) {
      clearTimeout(t);
      wake();
    }
    await Promise.allSettled([...this.inflight]);
  }

  private onEvent(ev: CommittedEvent): void {
    if (ev.kind !== 'arq' || ev.from !== ArqStates.BindStarted) return;
    const status = STATUS[ev.to];
    if (!status) return;
    let instance: string | undefined;
    try {
      instance = this.opts.getArq(ev.id).binding?.instanceUuid;
    } catch {
      instance = undefined;
    }
    if (!instance) {
      this.opts.log.warn({ arqUuid: ev.id, to: ev.to }, 'bind resolved without an instance: no Nova event');
      return;
    }
    const event: NovaEvent = { name: 'accelerator-request-bound', server_uuid: instance, tag: ev.id, status };
    this.batchRequestId ??= ev.requestId;
    const held = this.held.get(instance);
    const events = [...(held?.events ?? []), event];
    if (this.stillBinding(instance, events)) {
      if (held) held.events = events;
      else this.held.set(instance, { events, timer: setTimeout(() => this.release(instance), this.opts.holdMs ?? 60_000) });
      return;
    }
    if (held) clearTimeout(held.timer);
    this.held.delete(instance);
    this.queue(events);
  }

  /** Whether another ARQ of `instance` than those resolved in `events` is still binding. */
  private stillBinding(instance: string, events: NovaEvent[]): boolean {
    if (!this.opts.arqsOfInstance) return false;
    const told = new Set(events.map((e) => e.tag));
    return this.opts.arqsOfInstance(instance).some((a) => a.state === ArqStates.BindStarted && !told.has(a.uuid));
  }

  /** An instance's held results, sent without waiting any longer. */
  private release(instance: string): void {
    const held = this.held.get(instance);
    this.held.delete(instance);
    if (held) this.queue(held.events);
  }

  private queue(events: NovaEvent[]): void {
    this.batch.push(...events);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const events = this.batch;
        const requestId = this.batchRequestId;
        this.batch = [];
        this.batchRequestId = undefined;
        // Nova logs the bind's request id (Nova's own PATCH, usually) beside its own.
        this.track(withGlobalRequestId(requestId, () => this.deliver(events, 1)));
      });
    }
  }

  private post(body: string): Promise<{ status: number; text: string }> {
    return postWith(this.opts)(body);
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private async deliver(events: NovaEvent[], attempt: number): Promise<void> {
    const requestId = globalRequestId();
    const ids = { arqs: events.map((e) => e.tag), servers: [...new Set(events.map((e) => e.server_uuid))], attempt, ...(requestId ? { requestId } : {}) };
    let outcome: { retry: boolean; reason: string } | undefined;
    try {
      const res = await this.post(JSON.stringify({ events }));
      const text = res.text;
      if (res.status === 200) {
        this.opts.log.info({ ...ids, status: res.status }, 'Nova told: accelerator-request-bound');
        return;
      }
      if (res.status === 207 && allNotOnHost(text)) {
        // Nova answers 422 per event while the instance has no host yet: nothing waits for them.
        this.opts.log.info({ ...ids, status: res.status }, 'Nova: instance not on a host yet (207/422): event ignored');
        return;
      }
      outcome = { retry: res.status >= 500 || res.status === 429 || res.status === 207, reason: `HTTP ${res.status}: ${text.slice(0, 200)}` };
    } catch (err) {
      outcome = { retry: true, reason: err instanceof Error ? err.message : String(err) };
    }
    if (!outcome.retry || attempt > this.opts.retries || this.stopped) {
      this.opts.log.error({ ...ids, reason: outcome.reason }, 'could not tell Nova accelerator-request-bound; giving up');
      return;
    }
    const delayMs = Math.min(this.opts.retryDelayMs * 2 ** (attempt - 1), 30_000);
    this.opts.log.warn({ ...ids, reason: outcome.reason, retryInMs: delayMs }, 'telling Nova failed; will retry');
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        this.timers.delete(t);
        resolve();
      };
      const t = setTimeout(wake, delayMs);
      this.timers.set(t, wake);
    });
    if (!this.stopped) await this.deliver(events, attempt + 1);
  }
}

/** POST /os-server-external-events through the Keystone session (one re-authentication on 401) or with the fixed token. */
function postWith(o: NovaNotifierOptions): (body: string) => Promise<{ status: number; text: string }> {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json',
    'openstack-api-version': 'compute 2.82',
    'x-openstack-nova-api-version': '2.82',
  };
  if (o.session) {
    const session = o.session;
    return (body) =>
      session.request('/os-server-external-events', { method: 'POST', headers: { ...headers, ...globalRequestIdHeader() }, body, timeoutMs: 10_000 });
  }
  return async (body) => {
    const res = await fetch(`${o.novaUrl!.replace(/\/+$/, '')}/os-server-external-events`, {
      method: 'POST',
      headers: { ...headers, ...globalRequestIdHeader(), 'x-auth-token': o.token },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  };
}

function allNotOnHost(text: string): boolean {
  try {
    const body = JSON.parse(text) as { events?: { code?: number }[] };
    return Array.isArray(body.events) && body.events.length > 0 && body.events.every((e) => e.code === 422);
  } catch {
    return false;
  }
}

/** Starts the notifier from the configuration (`novaUrl`, `v2.novaToken`, `v2.novaRetries`, ...). */
export function startNovaNotifier(
  config: { novaUrl?: string; v2: { novaToken: string; novaRetries: number; novaRetryDelayMs: number }; nova?: Config['nova'] },
  control: { hub: EventHub; getArq: (uuid: string) => ArqView; listArqs: (filter: { instanceUuid?: string }) => ArqView[] },
  log: Logger,
): NovaNotifier {
  return new NovaNotifier({
    novaUrl: config.novaUrl,
    token: config.v2.novaToken,
    retries: config.v2.novaRetries,
    retryDelayMs: config.v2.novaRetryDelayMs,
    ...(config.nova?.authUrl ? { session: novaSession(config.nova, config.novaUrl) } : {}),
    hub: control.hub,
    getArq: (uuid) => control.getArq(uuid),
    arqsOfInstance: (instanceUuid) => control.listArqs({ instanceUuid }),
    log,
  }).start();
}

/**
 * `[nova]`'s Keystone session: the configured service user; its token also goes as the
 * `X-Service-Token` Nova checks for service-to-service calls. The endpoint is the catalog's
 * `compute` entry unless novaUrl overrides it.
 */
export function novaSession(nova: Config['nova'], novaUrl?: string): KeystoneSession {
  return new KeystoneSession({
    authUrl: nova.authUrl!,
    auth: authMethod('nova', nova),
    serviceType: 'compute',
    interfaces: nova.validInterfaces,
    serviceTokenFrom: 'self',
    ...(nova.regionName ? { region: nova.regionName } : {}),
    ...(novaUrl ? { endpointOverride: novaUrl } : {}),
  });
}
