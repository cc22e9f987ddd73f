import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus } from '../../bus/index.js';
import { DriverCommandMessage, DriverCommandReply, type DriverCommandMsg, type DriverStateMsg } from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { stableId } from '../../ids/index.js';
import { CyborgError, DriverError, isCyborgError } from '../../errors/index.js';
import { attachInstance, detachInstance, type Settle } from './instance-attach.js';
import { DriverRuns, type DriverOp, type DriverRecord } from './driver-run.js';
import { DriverServices, type ServiceDoc } from './driver-services.js';
import type { Journal, Recovered } from '../runtime/index.js';
import {
  AcceleratorStates,
  driverMachine,
  type DriverOpOutcome,
  type DriverOpRequest,
  type DriverState,
  DriverStates,
  HostStates,
  tagsOfState,
} from '../../machines/index.js';
import type {
  AcceleratorView,
  AttachRequest,
  AttachResult,
  BackendService,
  ControlPlane,
  DetachResult,
  DiscoverResult,
  DriverControl,
  DriverView,
  RequestMeta,
  ServiceView,
} from '../../model/index.js';

/** The document collections this file writes through the journal. */
export const DriverCollections = { drivers: 'drivers', services: 'services' } as const;

export interface DriverAdminOptions {
  bus: Bus;
  journal: Journal;
  log: Logger;
  /** The conductor: accelerators, hosts, ARQs. */
  control: ControlPlane;
  timeoutMs: number;
  /** Resolves once an accelerator's changes are committed (the conductor's actor knows). */
  settle?: Settle;
}

/**
 * Drivers per host, through the conductor: install / uninstall / update run on the host's agent
 * (request/reply on `cyborg.agent.driver.<host>`), and their outcome is recorded in the journal
 * (collection `drivers`) before the caller hears of it. The record is handed to the agent at each
 * registration, so it survives agent restarts. One operation at a time per driver; uninstall and
 * update are refused while an instance holds one of the driver's accelerators.
 */
export class DriverAdmin implements DriverControl {
  private readonly records = new Map<string, DriverRecord>();
  private readonly services: DriverServices;
  private readonly runs: DriverRuns;

  constructor(private readonly opts: DriverAdminOptions) {
    const { journal, log, control } = opts;
    this.runs = new DriverRuns({ journal, log, operate: (req) => this.operate(req), persist: (records) => this.persist(records) });
    this.services = new DriverServices({
      journal,
      log,
      control,
      collection: DriverCollections.services,
      installedOn: (host) => [...this.records.values()].filter((r) => r.host === host && r.installed).map((r) => r.name),
      ask: (cmd) => this.ask(cmd),
    });
  }

  /** Rebuilds the records from what the journal recovered (conductor start). */
  load(docs: Recovered['documents']): void {
    for (const d of docs) {
      if (d.collection === DriverCollections.drivers) this.records.set(d.id, d.body as unknown as DriverRecord);
      if (d.collection === DriverCollections.services) this.services.load(d.id, d.body as unknown as ServiceDoc);
    }
  }

  /**
   * An agent registered with the drivers it loaded: drivers seen for the first time are recorded
   * as installed at the version the agent ships; the answer is the record for each, which the agent
   * adopts. The answer is known at once; `persisted` settles when the new records are committed, so
   * the caller can let that commit share a flush with its own (a registration waits for one flush).
   */
  onRegister(host: string, drivers: { name: string; version: string }[]): { drivers: DriverStateMsg[]; persisted: Promise<void> } {
    const fresh: DriverRecord[] = [];
    const answer = drivers.map((d) => {
      const id = driverId(host, d.name);
      let r = this.records.get(id);
      if (!r) {
        r = { id, host, name: d.name, version: d.version, installed: true, lastError: null, updatedAt: new Date().toISOString() };
        fresh.push(r);
      }
      return { name: r.name, version: r.version, installed: r.installed };
    });
    return { drivers: answer, persisted: fresh.length > 0 ? this.persist(fresh) : Promise.resolve() };
  }

  listDrivers(filter: { host?: string } = {}): DriverView[] {
    return [...this.records.values()]
      .filter((r) => !filter.host || r.host === filter.host)
      .sort((a, b) => a.host.localeCompare(b.host) || a.name.localeCompare(b.name))
      .map((r) => this.view(r));
  }

  getDriver(ref: string, host?: string): DriverView {
    return this.view(this.resolve(ref, host));
  }

  async installDriver(ref: string, o: { host?: string; version?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.change('install', this.resolve(ref, o.host), o.version, meta);
  }

  async uninstallDriver(ref: string, o: { host?: string }, meta: RequestMeta = {}): Promise<DriverView> {
    return this.change('uninstall', this.resolve(ref, o.host), undefined, meta);
  }

  /** Only on a drained host (api/routes/maintenance.ts), unless `force`: an update may reload what instances use. */
  async updateDriver(ref: string, o: { host?: string; version?: string; force?: boolean }, meta: RequestMeta = {}): Promise<DriverView> {
    const rec = this.resolve(ref, o.host);
    if (!o.force) this.requireDrained(rec);
    return this.change('update', rec, o.version, meta);
  }

  listServices(filter: { host?: string; driver?: string } = {}): ServiceView[] {
    return this.services.list(filter);
  }

  discoverServices(o: { host?: string }, meta: RequestMeta = {}): Promise<DiscoverResult> {
    return this.services.discover(o, meta);
  }

  attachInstance(instanceUuid: string, req: AttachRequest, meta: RequestMeta = {}): Promise<AttachResult> {
    return attachInstance(this.opts.control, instanceUuid, req, meta, this.opts.settle);
  }

  detachInstance(instanceUuid: string, meta: RequestMeta = {}): Promise<DetachResult> {
    return detachInstance(this.opts.control, instanceUuid, meta, this.opts.settle);
  }

  // --- internals ----------------------------------------------------------------------------

  private async change(op: DriverOp, rec: DriverRecord, version: string | undefined, meta: RequestMeta): Promise<DriverView> {
    const log = this.opts.log.child({ host: rec.host, driver: rec.name, op, requestId: meta.requestId, actor: meta.actor });
    const running = this.runs.get(rec.id);
    if (running)
      throw new CyborgError('driver.busy', `driver ${rec.name} on ${rec.host} is ${running.m.value}: wait for it to finish, then retry`, {
        id: rec.id,
        state: running.m.value,
      });
    this.preflight(op, rec, version);
    if (op === 'install' && rec.installed && (version === undefined || version === rec.version)) return this.view(rec);
    if (op === 'uninstall' && !rec.installed) return this.view(rec);
    const run = await this.runs.perform(op, rec, version, meta);
    if (run.error !== undefined) {
      log.warn({ err: run.error }, 'driver operation failed');
      throw run.error;
    }
    const now = this.records.get(rec.id)!;
    log.info({ version: now.version, installed: now.installed }, 'driver changed');
    return this.view(now);
  }

  /** The machine's `driverOp`: runs one operation on the host's agent. */
  private async operate(req: DriverOpRequest): Promise<DriverOpOutcome> {
    const id = driverId(req.host, req.driver);
    const run = this.runs.get(id);
    try {
      if (req.op === 'uninstall') await this.disableAll(this.records.get(id)!, run?.meta ?? {});
      const reply = await this.ask({ op: req.op, host: req.host, driver: req.driver, ...(req.version ? { version: req.version } : {}) });
      return { installed: reply.installed, version: reply.version };
    } catch (err) {
      if (run) run.error = err;
      throw err;
    }
  }

  /** A host is drained when every device of it is marked for maintenance and none has a consumer left. */
  private requireDrained(rec: DriverRecord): void {
    const accs = this.opts.control.listAccelerators({ host: rec.host }).filter((a) => a.state !== AcceleratorStates.removed);
    const notDrained = accs.filter((a) => a.maintenance?.mark !== 'maintenance');
    if (notDrained.length === 0) return;
    const draining = notDrained.filter((a) => a.maintenance?.mark === 'draining').length;
    throw new CyborgError(
      'host.not_drained',
      `host ${rec.host} is not drained (${notDrained.length - draining} device(s) in service, ${draining} still draining): ` +
        `drain it first (cyborg host drain ${rec.host}) and wait for its consumers to leave, or update with --force`,
      { host: rec.host, inService: notDrained.length - draining, draining },
    );
  }

  /** Refuses what would hurt a running instance or cannot work now, saying why and what to do. */
  private preflight(op: DriverOp, rec: DriverRecord, version: string | undefined): void {
    const host = this.opts.control.getHost(rec.host);
    if (host.state !== HostStates.online) {
      throw new CyborgError('host.offline', `host ${rec.host} is ${host.state}: its agent must be online to change driver ${rec.name}`, {
        host: rec.host,
        state: host.state,
      });
    }
    if (op === 'install' && rec.installed && version !== undefined && version !== rec.version) {
      throw new CyborgError(
        'driver.already_installed',
        `driver ${rec.name} is already installed on ${rec.host} at ${rec.version}: use update-driver to move to ${version}`,
        { id: rec.id, version: rec.version },
      );
    }
    if (op === 'update' && !rec.installed) {
      throw new CyborgError(
        'driver.not_installed',
        `driver ${rec.name} is not installed on ${rec.host}: install it first (cyborg install-driver ${rec.name} --host ${rec.host})`,
        { id: rec.id },
      );
    }
    if (op === 'install') return;
    const accs = this.acceleratorsOf(rec);
    const held = accs.find((a) => a.allocations.length > 0 || a.tags.includes('in-use'));
    if (held) {
      const instance = held.allocations[0]?.instanceUuid;
      throw new CyborgError(
        'driver.in_use',
        `driver ${rec.name} on ${rec.host} is in use: accelerator ${held.name} (${held.id}) is attached${instance ? ` to instance ${instance}` : ''}. ` +
          `Detach it first${instance ? ` (cyborg detach-instance ${instance})` : ''}, then ${op} the driver`,
        { id: rec.id, acceleratorId: held.id, instanceUuid: instance ?? null },
      );
    }
    const working = accs.find((a) => a.tags.includes('busy'));
    if (working) {
      throw new CyborgError('driver.busy', `accelerator ${working.name} of driver ${rec.name} is ${working.state}: wait for it to settle, then retry`, {
        id: rec.id,
        acceleratorId: working.id,
        state: working.state,
      });
    }
  }

  /** Gives back every enabled accelerator of the driver (ready / programmed → inactive) before it goes. */
  private async disableAll(rec: DriverRecord, meta: RequestMeta): Promise<void> {
    for (const a of this.acceleratorsOf(rec)) {
      if (!a.allowed.includes('DISABLE')) continue;
      const v = await this.opts.control.act(a.id, { type: 'DISABLE' }, meta);
      if (v.state === AcceleratorStates.error)
        throw new DriverError(
          'driver.failed',
          `could not disable accelerator ${a.name} before uninstalling ${rec.name}: ${v.error?.reason ?? 'unknown reason'}`,
          { acceleratorId: a.id },
        );
    }
  }

  private acceleratorsOf(rec: DriverRecord): AcceleratorView[] {
    return this.opts.control.listAccelerators({ host: rec.host }).filter((a) => a.driver === rec.name && a.state !== AcceleratorStates.removed);
  }

  private async ask(cmd: Omit<DriverCommandMsg, 'idempotencyKey'>): Promise<{ installed: boolean; version: string; services?: BackendService[] }> {
    let reply;
    try {
      reply = await this.opts.bus.request(
        Subjects.driverCommand(cmd.host),
        DriverCommandMessage,
        DriverCommandReply,
        { ...cmd, idempotencyKey: randomUUID() },
        { timeoutMs: this.opts.timeoutMs },
      );
    } catch (err) {
      if (isCyborgError(err) && (err.code === 'bus.timeout' || err.code === 'bus.no_responder')) {
        throw new DriverError(
          'driver.timeout',
          `the agent on ${cmd.host} did not answer ${cmd.op} of driver ${cmd.driver} in time`,
          { host: cmd.host },
          { cause: err },
        );
      }
      throw err;
    }
    if (!reply.ok) {
      if (reply.code === 'driver.not_found')
        throw new CyborgError('driver.not_found', `${reply.reason}: load it in the agent's configuration first`, { host: cmd.host, driver: cmd.driver });
      throw new DriverError('driver.failed', `${cmd.op} of driver ${cmd.driver} on ${cmd.host} failed: ${reply.reason}`, {
        host: cmd.host,
        driver: cmd.driver,
        reason: reply.reason,
      });
    }
    return reply;
  }

  private async persist(records: DriverRecord[]): Promise<void> {
    await this.opts.journal.commit(records.map((r) => ({ type: 'document' as const, collection: DriverCollections.drivers, id: r.id, body: { ...r } })));
    for (const r of records) this.records.set(r.id, r);
  }

  /** A driver by id, by `name@host`, or by name (with `host`, or when only one host has it). */
  private resolve(ref: string, host?: string): DriverRecord {
    const byId = this.records.get(ref);
    if (byId) return byId;
    const at = ref.lastIndexOf('@');
    const name = at > 0 ? ref.slice(0, at) : ref;
    const onHost = at > 0 ? ref.slice(at + 1) : host;
    const found = [...this.records.values()].filter((r) => r.name === name && (!onHost || r.host === onHost));
    if (found.length === 1) return found[0]!;
    if (found.length > 1) {
      throw new CyborgError(
        'driver.ambiguous',
        `driver ${name} runs on ${found.length} hosts (${found.map((r) => r.host).join(', ')}): name one with --host, or use the driver's id`,
        { name, hosts: found.map((r) => r.host) },
      );
    }
    const known = [...this.records.values()].map((r) => `${r.name}@${r.host}`).sort();
    throw new CyborgError(
      'driver.not_found',
      `no driver "${ref}"${onHost ? ` on host ${onHost}` : ''}. Known drivers: ${known.join(', ') || 'none'} (see: cyborg driver-list)`,
      { id: ref },
    );
  }

  private view(r: DriverRecord): DriverView {
    const { installed, ...rest } = r;
    const running = this.runs.get(r.id);
    let hostState: DriverView['hostState'] = 'unknown';
    let loaded = false;
    try {
      const h = this.opts.control.getHost(r.host);
      hostState = h.state;
      loaded = h.drivers.some((d) => d.name === r.name);
    } catch {
      // a host whose actor is gone (lease moved): shown as unknown
    }
    const accs = this.acceleratorsOf(r);
    const state = (running ? running.m.value : installed ? DriverStates.installed : DriverStates.uninstalled) as DriverState;
    return {
      ...rest,
      state,
      tags: [...tagsOfState(driverMachine, state)],
      loaded,
      hostState,
      accelerators: accs.length,
      inUse: accs.filter((a) => a.allocations.length > 0).length,
    };
  }
}

/** The stable id of a driver on a host. */
export function driverId(host: string, name: string): string {
  return stableId(host, 'driver', name);
}
