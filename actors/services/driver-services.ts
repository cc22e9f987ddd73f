// The backend services the installed drivers report per host (service-list / discover-services):
// asked of the agents on demand, kept as documents, shown from memory.
import type { Logger } from 'pino';
import type { DriverCommandMsg } from '../../bus/index.js';
import { DriverError, isCyborgError } from '../../errors/index.js';
import type { Journal } from '../runtime/index.js';
import { HostStates } from '../../machines/index.js';
import type { BackendService, ControlPlane, DiscoverResult, RequestMeta, ServiceView } from '../../model/index.js';

/** One host's services of one driver, as last discovered: the document kept per (host, driver). */
export interface ServiceDoc {
  host: string;
  driver: string;
  discoveredAt: string;
  services: BackendService[];
}

export interface DriverServicesOptions {
  journal: Journal;
  log: Logger;
  control: ControlPlane;
  /** The document collection the services are kept in. */
  collection: string;
  /** The drivers installed on a host now: only those are asked. */
  installedOn: (host: string) => string[];
  /** A driver command on the host's agent, its failures as typed errors. */
  ask: (cmd: Omit<DriverCommandMsg, 'idempotencyKey'>) => Promise<{ services?: BackendService[] }>;
}

export class DriverServices {
  private readonly docs = new Map<string, ServiceDoc>();

  constructor(private readonly opts: DriverServicesOptions) {}

  /** A document the journal recovered (conductor start). */
  load(id: string, doc: ServiceDoc): void {
    this.docs.set(id, doc);
  }

  list(filter: { host?: string; driver?: string } = {}): ServiceView[] {
    return [...this.docs.values()]
      .filter((s) => (!filter.host || s.host === filter.host) && (!filter.driver || s.driver === filter.driver))
      .sort((a, b) => a.host.localeCompare(b.host) || a.driver.localeCompare(b.driver))
      .flatMap((s) => s.services.map((x) => ({ ...x, host: s.host, driver: s.driver, discoveredAt: s.discoveredAt })));
  }

  /** Asks the agents (one host, or every online host) for the services of their installed drivers, and records them. */
  async discover(o: { host?: string }, meta: RequestMeta = {}): Promise<DiscoverResult> {
    const { control, journal, log } = this.opts;
    const hosts = o.host ? [control.getHost(o.host)] : control.listHosts().filter((h) => h.state === HostStates.online);
    const failures: DiscoverResult['failures'] = [];
    const docs: ServiceDoc[] = [];
    await Promise.all(
      hosts.map(async (h) => {
        for (const driver of this.opts.installedOn(h.name)) {
          try {
            const reply = await this.opts.ask({ op: 'services', host: h.name, driver });
            docs.push({ host: h.name, driver, discoveredAt: new Date().toISOString(), services: reply.services ?? [] });
          } catch (err) {
            failures.push({ host: h.name, driver, code: isCyborgError(err) ? err.code : 'driver.failed', reason: (err as Error).message });
          }
        }
      }),
    );
    if (docs.length > 0) {
      await journal.commit(docs.map((d) => ({ type: 'document' as const, collection: this.opts.collection, id: `${d.host}/${d.driver}`, body: { ...d } })));
      for (const d of docs) this.docs.set(`${d.host}/${d.driver}`, d);
    }
    log.info({ hosts: hosts.length, recorded: docs.length, failures: failures.length, requestId: meta.requestId }, 'services discovered');
    if (o.host && docs.length === 0 && failures.length > 0) {
      throw new DriverError(
        failures[0]!.code === 'driver.timeout' ? 'driver.timeout' : 'driver.failed',
        `service discovery on ${o.host} failed: ${failures[0]!.reason}`,
        { failures },
      );
    }
    const seen = new Set(docs.map((d) => d.host));
    return { services: this.list().filter((s) => seen.has(s.host)), failures };
  }
}
