import type { AttachRequest, AttachResult, DetachResult, DiscoverResult, DriverControl, DriverView, RequestMeta, ServiceView } from '../model/index.js';
import { isCyborgError } from '../errors/index.js';
import type { ArgsOf, ControlOp, ReplyOf } from './messages.js';

/**
 * A view in which a driver operation is under way (its machine's `busy` tag: installing,
 * programming, updating…): a call that outlasts the request timeout in one is accepted work, not a failure.
 */
export function isBusy(view: { tags: readonly string[] }): boolean {
  return view.tags.includes('busy');
}

/** Sends one call to the conductors (to the holder of `host`'s lease when a host is named). */
export type ControlCall = <O extends ControlOp>(op: O, args: ArgsOf<O>, host?: string) => Promise<ReplyOf<O>>;

/**
 * Driver administration for an `api` process apart from the conductors: every method is a call
 * over the bus to a conductor's DriverAdmin. Driver records live with the conductor that hears
 * the host's agent, so with several conductors a call that names its host reaches the right one.
 */
export class RemoteDriverControl implements DriverControl {
  constructor(private readonly call: ControlCall) {}

  /** The driver's view when its operation outlasts the request timeout and goes on (the route answers 202). */
  private async orUnderWay(reply: Promise<DriverView>, ref: string, host: string | undefined): Promise<DriverView> {
    try {
      return await reply;
    } catch (err) {
      if (!isCyborgError(err) || err.code !== 'bus.timeout') throw err;
      const now = await this.getDriver(ref, host).catch(() => undefined);
      if (now && isBusy(now)) return now;
      throw err;
    }
  }

  listDrivers(filter: { host?: string } = {}): Promise<DriverView[]> {
    return this.call('drivers.list', { filter }, filter.host);
  }

  getDriver(ref: string, host?: string): Promise<DriverView> {
    return this.call('drivers.get', { ref, ...(host ? { host } : {}) }, host ?? hostOf(ref));
  }

  installDriver(ref: string, opts: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.orUnderWay(this.call('drivers.install', { ref, opts, meta }, opts.host ?? hostOf(ref)), ref, opts.host);
  }

  uninstallDriver(ref: string, opts: { host?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.orUnderWay(this.call('drivers.uninstall', { ref, opts, meta }, opts.host ?? hostOf(ref)), ref, opts.host);
  }

  updateDriver(ref: string, opts: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.orUnderWay(this.call('drivers.update', { ref, opts, meta }, opts.host ?? hostOf(ref)), ref, opts.host);
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
