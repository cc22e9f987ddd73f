import type {
  AttachRequest, AttachResult, DetachResult, DiscoverResult, DriverControl, DriverView, RequestMeta, ServiceView,
} from '../model/index.js';
import type { ArgsOf, ControlOp, ReplyOf } from './messages.js';

/** Sends one call to the conductors (to the holder of `host`'s lease when a host is named). */
export type ControlCall = <O extends ControlOp>(op: O, args: ArgsOf<O>, host?: string) => Promise<ReplyOf<O>>;

/**
 * Driver administration for an `api` process apart from the conductors: every method is a call
 * over the bus to a conductor's DriverAdmin. Driver records live with the conductor that hears
 * the host's agent, so with several conductors a call that names its host reaches the right one.
 */
export class RemoteDriverControl implements DriverControl {
  constructor(private readonly call: ControlCall) {}

  listDrivers(filter: { host?: string } = {}): Promise<DriverView[]> {
    return this.call('drivers.list', { filter }, filter.host);
  }

  getDriver(ref: string, host?: string): Promise<DriverView> {
    return this.call('drivers.get', { ref, ...(host ? { host } : {}) }, host ?? hostOf(ref));
  }

  installDriver(ref: string, opts: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.call('drivers.install', { ref, opts, meta }, opts.host ?? hostOf(ref));
  }

  uninstallDriver(ref: string, opts: { host?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.call('drivers.uninstall', { ref, opts, meta }, opts.host ?? hostOf(ref));
  }

  updateDriver(ref: string, opts: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.call('drivers.update', { ref, opts, meta }, opts.host ?? hostOf(ref));
  }

  listServices(filter: { host?: string; driver?: string } = {}): Promise<ServiceView[]> {
    return this.call('services.list', { filter }, filter.host);
  }

  discoverServices(opts: { host?: string }, meta: RequestMeta = {}): Promise<DiscoverResult> {
    return this.call('services.discover', { opts, meta }, opts.host);
  }

  attachInstance(instanceUuid: string, req: AttachRequest, meta: RequestMeta = {}): Promise<AttachResult> {
    return this.call('instances.attach', { instanceUuid, req, meta }, req.host);
  }

  detachInstance(instanceUuid: string, meta: RequestMeta = {}): Promise<DetachResult> {
    return this.call('instances.detach', { instanceUuid, meta });
  }
}

function hostOf(ref: string): string | undefined {
  const at = ref.lastIndexOf('@');
  return at > 0 ? ref.slice(at + 1) : undefined;
}
