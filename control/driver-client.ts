import type { AttachRequest, AttachResult, DetachResult, DiscoverResult, DriverControl, DriverView, RequestMeta, ServiceView } from '../model/index.js';

/** The DriverControl methods an api process may call on a conductor (op `driverAdmin`, args `[method, …]`). */
export const DRIVER_CONTROL_METHODS = [
  'listDrivers', 'getDriver', 'installDriver', 'uninstallDriver', 'updateDriver', 'listServices', 'discoverServices', 'attachInstance', 'detachInstance',
] as const;
type Method = (typeof DRIVER_CONTROL_METHODS)[number];

/** Sends one call to the conductors (to the holder of `host`'s lease when a host is named). */
export type DriverCall = (args: unknown[], host?: string) => Promise<unknown>;

/**
 * Driver administration for an `api` process apart from the conductors: every method is a call
 * over the bus to a conductor's DriverAdmin. Driver records live with the conductor that hears
 * the host's agent, so with several conductors a call that names its host reaches the right one.
 */
export class RemoteDriverControl implements DriverControl {
  constructor(private readonly call: DriverCall) {}

  listDrivers(filter: { host?: string } = {}): Promise<DriverView[]> {
    return this.ask('listDrivers', [filter], filter.host) as Promise<DriverView[]>;
  }

  getDriver(ref: string, host?: string): Promise<DriverView> {
    return this.ask('getDriver', [ref, host], host ?? hostOf(ref)) as Promise<DriverView>;
  }

  installDriver(ref: string, o: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.ask('installDriver', [ref, o, meta], o.host ?? hostOf(ref)) as Promise<DriverView>;
  }

  uninstallDriver(ref: string, o: { host?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.ask('uninstallDriver', [ref, o, meta], o.host ?? hostOf(ref)) as Promise<DriverView>;
  }

  updateDriver(ref: string, o: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.ask('updateDriver', [ref, o, meta], o.host ?? hostOf(ref)) as Promise<DriverView>;
  }

  listServices(filter: { host?: string; driver?: string } = {}): Promise<ServiceView[]> {
    return this.ask('listServices', [filter], filter.host) as Promise<ServiceView[]>;
  }

  discoverServices(o: { host?: string }, meta: RequestMeta = {}): Promise<DiscoverResult> {
    return this.ask('discoverServices', [o, meta], o.host) as Promise<DiscoverResult>;
  }

  attachInstance(instanceUuid: string, req: AttachRequest, meta: RequestMeta = {}): Promise<AttachResult> {
    return this.ask('attachInstance', [instanceUuid, req, meta], req.host) as Promise<AttachResult>;
  }

  detachInstance(instanceUuid: string, meta: RequestMeta = {}): Promise<DetachResult> {
    return this.ask('detachInstance', [instanceUuid, meta]) as Promise<DetachResult>;
  }

  private ask(method: Method, args: unknown[], host?: string): Promise<unknown> {
    return this.call([method, ...args], host);
  }
}

/** The conductor side: runs one `driverAdmin` call on its DriverAdmin (only the methods above). */
export function callDriverControl(admin: DriverControl, args: unknown[]): unknown {
  const [method, ...rest] = args as [string, ...never[]];
  if (!(DRIVER_CONTROL_METHODS as readonly string[]).includes(method)) throw new Error(`unknown driver control method ${String(method)}`);
  const fn = admin[method as Method] as (...a: never[]) => unknown;
  return fn.apply(admin, rest);
}

function hostOf(ref: string): string | undefined {
  const at = ref.lastIndexOf('@');
  return at > 0 ? ref.slice(at + 1) : undefined;
}
