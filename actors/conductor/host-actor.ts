import type { Logger } from 'pino';
import type { Bus, HealthMsg } from '../../bus/index.js';
import { AcceleratorStates, hostContextOf, type DriverOpInput, type hostMachine, type HostState, HostStates } from '../../machines/index.js';
import type { Passivation } from '../runtime/index.js';
import { AcceleratorActor } from './accelerator-actor.js';
import type { AcceleratorRuntime } from './accelerator-runtime.js';
import type { AcceleratorLogic } from './accelerator-logic.js';
import type { AcceleratorSpec } from './accelerator-view.js';
import type { AcceleratorRecord, HostRecord, Journal } from '../runtime/index.js';
import { MachineHost } from '../runtime/index.js';
import { withoutIdentity, type DeployableT, type DeviceT, type EventHub, type HostView, type RequestMeta } from '../../model/index.js';
import { commandAgent } from './agent-command.js';
import type { HostLogic } from './host-logic.js';
import type { Timing } from './timing.js';
import { CyborgError } from '../../errors/index.js';
import { applyIdentity, identityArgs, NO_SERIAL } from './identity.js';

export interface HostActorOptions {
  name: string;
  bus: Bus;
  journal: Journal;
  hub: EventHub;
  log: Logger;
  timing: Timing;
  record?: HostRecord;
  drivers?: { name: string; version: string }[];
  devices?: DeviceT[];
  acceleratorRecords?: Map<string, AcceleratorRecord>;
  /** Puts idle accelerators' machines to rest (one per conductor). */
  passivation: Passivation;
  /** The shared, provided machines (built once per conductor: see `hostLogic`, `acceleratorLogic`). */
  logic: { host: HostLogic; accelerator: AcceleratorLogic };
}

/**
 * Mirrors one compute host's agent session (online / stale / lost) and supervises one
 * AcceleratorActor per deployable that host reports. A crashed accelerator actor is restarted
 * from its last committed record, and the failure is logged.
 */
export class HostActor {
  readonly name: string;
  readonly accelerators = new Map<string, AcceleratorActor>();
  private devices: DeviceT[] = [];
  private m: MachineHost<typeof hostMachine>;
  /** Time of the last heartbeat or registration (ms), null before the first. */
  private lastBeatAt: number | null = null;
  /** Since when this actor watches the host: a host rebuilt as `online` gets a full staleAfter. */
  private readonly watchedSince = Date.now();
  drivers: { name: string; version: string }[];
  readonly restarts: { id: string; reason: string; at: string }[] = [];
  /** Shared by this host's accelerators (see AcceleratorRuntime). */
  private runtime: AcceleratorRuntime<AcceleratorActor> | undefined;

  private readonly opts: HostActorOptions;

  constructor(opts: HostActorOptions) {
    // The records it starts from are its accelerators' business once spawned: not kept here.
    this.opts = { ...opts, record: undefined, acceleratorRecords: undefined };
    this.name = opts.name;
    this.drivers = opts.drivers ?? [];
    this.m = new MachineHost({
      machine: opts.logic.host,
      input: { host: opts.name },
      // A record read back without the context (an inventory whose host row never made it) is
      // completed from a fresh one, so its view and heartbeats never meet an undefined epoch.
      record: opts.record && { value: opts.record.value, context: { ...hostContextOf(opts.name), ...opts.record.context } },
      owner: {
        onTransition: (rec, persisted) => {
          opts.log.info({ host: this.name, from: rec.from, to: rec.to, event: rec.event }, 'host liveness');
          const full = { kind: 'host' as const, id: this.name, host: this.name, ...rec };
          void opts.journal
            .commit([
              { type: 'host', host: this.name, record: persisted, drivers: this.drivers },
              { type: 'transition', record: full },
            ])
            .then(
              () => opts.hub.publish(full),
              (err: unknown) => opts.log.error({ err, host: this.name }, 'could not persist host state'),
            );
        },
        onCrash: (err) => opts.log.error({ err, host: this.name }, 'host machine crashed'),
      },
    });
    if (opts.devices) {
      this.devices = opts.devices;
      for (const spec of specsOf(this.name, opts.devices)) {
        this.spawn(spec, opts.acceleratorRecords?.get(spec.deployable.uuid));
      }
    }
    this.m.start();
  }

  get state(): HostState {
    return this.m.value;
  }

  /** When the host last gave a sign of life (or this actor started watching it). */
  get lastSignAt(): number {
    return this.lastBeatAt ?? this.watchedSince;
  }

  view(): HostView {
    const ctx = this.m.snapshot.context;
    return {
      name: this.name,
      state: this.m.value,
      agentId: ctx.agentId,
      epoch: ctx.epoch,
      drivers: this.drivers,
      accelerators: this.accelerators.size,
      lastHeartbeatAt: this.lastBeatAt === null ? null : new Date(this.lastBeatAt).toISOString(),
    };
  }

  async register(agentId: string, epoch: number, drivers: { name: string; version: string }[]): Promise<void> {
    this.drivers = drivers;
    this.lastBeatAt = Date.now();
    this.m.send({ type: 'REGISTER', agentId, epoch }, { actor: `agent:${agentId}` });
    await this.opts.journal.commit([{ type: 'host', host: this.name, record: this.m.record(), drivers }]);
  }

  /**
   * A routine beat (online, same agent session) only notes its time: the machine's stale timer
   * reads it when it fires. Any other beat — from a stale or lost host, or a new session — is an
   * event for the machine.
   */
  heartbeat(agentId: string, epoch: number, seq: number): void {
    this.lastBeatAt = Date.now();
    const ctx = this.m.snapshot.context;
    if (this.m.value === HostStates.online && ctx.agentId === agentId && ctx.epoch === epoch) return;
    this.m.send({ type: 'HEARTBEAT', agentId, epoch, seq }, { actor: `agent:${agentId}` });
  }

  /**
   * Reconciles a full inventory snapshot with what is recorded: new deployables appear
   * `inactive`, missing unattached ones are `removed`, missing attached ones are flagged (never
   * dropped), returning ones are rediscovered. Ids are stable, so nothing is ever duplicated.
   * A device the agent could not observe this time comes as its last observed record with the
   * reason (`unobserved`): kept as it was, its health shown `unknown` until it is observed again.
   * Returns the accelerators reported with other traits, resource class or size than before
   * (another function programmed out of band, a card re-laid out, a reboot with new firmware).
   */
  async applyInventory(devices: DeviceT[], meta: RequestMeta = {}, failedDrivers: readonly { driver: string; reason: string }[] = []): Promise<string[]> {
    // A driver whose discovery failed and whose devices the agent could not send (its cache is
    // gone): those recorded for it stay as they are, marked, instead of being removed.
    const kept = failedDrivers.length > 0 ? this.keptFor(devices, failedDrivers) : [];
    if (kept.length > 0) devices = [...devices, ...kept];
    devices = keepingProviders(devices, (uuid) => this.accelerators.get(uuid)?.deployable.rpUuid);
    const specs = specsOf(this.name, devices);
    // Accelerators whose provider must change with no transition to say so (traits, class, size).
    const respecified: string[] = [];
    const seen = new Set<string>();
    const created: AcceleratorActor[] = [];
    const returned: AcceleratorActor[] = [];
    // Asked before the new ones exist: a drain is the marks its present devices carry.
    const drainedSince = this.drainedSince();
    for (const spec of specs) {
      seen.add(spec.deployable.uuid);
      const existing = this.accelerators.get(spec.deployable.uuid);
      if (!existing) {
        const made = this.spawn(spec);
        if (spec.device.unobserved) made.setUnobserved(spec.device.unobserved);
        created.push(made);
        continue;
      }
      const placed = placementFacts(existing.deployable);
      existing.updateSpec(spec);
      // The agent's last observed record of a device its driver could not observe now: kept, marked.
      existing.setUnobserved(spec.device.unobserved ?? null);
      if (placementFacts(spec.deployable) !== placed) respecified.push(existing.id);
      const returning = existing.missing || existing.state === AcceleratorStates.removed;
      if (existing.missing) existing.missing = false;
      // An unobserved record is the agent's last observed one: it says nothing new of the card.
      const replaced = !spec.device.unobserved && applyIdentity(existing, spec.device.identity, returning, meta, this.opts.log);
      if (replaced) returned.push(existing);
      else if (existing.state === AcceleratorStates.removed) {
        existing.system({ type: 'REDISCOVERED', ...(spec.device.identity ? {} : { identity: NO_SERIAL }) }, meta);
        returned.push(existing);
      }
    }
    for (const actor of this.accelerators.values()) {
      if (seen.has(actor.id) || actor.state === AcceleratorStates.removed) continue;
      if (!actor.system({ type: 'REMOVE' }, meta)) {
        actor.missing = true;
        this.opts.log.warn({ host: this.name, acceleratorId: actor.id, state: actor.state }, 'accelerator missing from discovery but held: kept and flagged');
      }
    }
    const before = this.devices;
    // The cards' serials are in their accelerators' records now; the rows keep Cyborg's columns.
    devices = withoutIdentity(devices);
    this.devices = devices;
    // The new accelerators' first records follow the inventory at once: the journal keeps the
    // order, and both usually share one flush (a host's registration waits for one, not two).
    const committed = [
      this.opts.journal.commit([{ type: 'inventory', host: this.name, devices }]),
      ...created.map((a) => a.announceDiscovered(meta, identityArgs(a.context.identity))),
    ];
    // Not written (503 while the database is away): what this report made new is forgotten, so
    // that memory keeps what the database has and the agent's next report brings them again.
    void Promise.allSettled(committed).then((outcomes) => {
      if (outcomes.some((o) => o.status === 'rejected')) this.unapply(created, outcomes[0]!.status === 'rejected' ? before : undefined);
    });
    // A device that appears on a host being drained (hot-plugged, a new inventory) joins the
    // drain at once, before anything can enable or bind it: marked and reserved like the others.
    if (drainedSince !== undefined) {
      for (const a of [...created, ...returned]) {
        if (a.context.maintenance?.host) continue;
        a.system({ type: 'MAINTAIN', scope: 'host', at: Date.now() }, { actor: 'conductor' });
      }
    }
    await Promise.all(committed);
    await Promise.all([...this.accelerators.values()].map((a) => a.flushed().catch(() => undefined)));
    return respecified;
  }

  inventory(): DeviceT[] {
    return this.devices;
  }

  /** The recorded devices of the failed drivers that `devices` lacks, marked with their driver's reason. */
  private keptFor(devices: readonly DeviceT[], failed: readonly { driver: string; reason: string }[]): DeviceT[] {
    const why = new Map(failed.map((f) => [f.driver, f.reason]));
    const reported = new Set(devices.map((d) => d.uuid));
    return this.devices.filter((d) => why.has(d.driver) && !reported.has(d.uuid)).map((d) => ({ ...d, unobserved: why.get(d.driver)! }));
  }

  /**
   * When the drain of this host began, if it is being drained: its devices carry the host's mark
   * (api/routes/maintenance.ts sets it on each), so the earliest mark among them is the drain.
   */
  drainedSince(): number | undefined {
    let since: number | undefined;
    for (const a of this.accelerators.values()) {
      const m = a.state === AcceleratorStates.removed ? undefined : a.context.maintenance;
      if (m?.host && (since === undefined || m.since < since)) since = m.since;
    }
    return since;
  }

  stop(): void {
    this.m.stop();
    for (const a of this.accelerators.values()) a.stop();
  }

  /**
   * One poll of the host's health checks: each goes to its own accelerator only — one bad device
   * never marks its host or its siblings. A check for a deployable this host does not have is
   * dropped (counted, logged once per message). Returns how many were dropped.
   */
  applyHealth(msg: HealthMsg): number {
    const meta = { actor: `agent:${this.name}` };
    let unknown: string[] | null = null;
    for (const c of msg.checks) {
      const actor = this.accelerators.get(c.deployableUuid);
      if (!actor) {
        (unknown ??= []).push(c.deployableUuid);
        continue;
      }
      actor.healthCheck({ ok: c.healthy, at: msg.at, ...(c.severity ? { severity: c.severity } : {}), ...(c.reason ? { reason: c.reason } : {}) }, meta);
    }
    if (unknown) {
      this.opts.log.warn(
        { host: this.name, agentId: msg.agentId, unknown: unknown.length, first: unknown.slice(0, 5) },
        'health checks for deployables this host does not have: dropped',
      );
    }
    return unknown?.length ?? 0;
  }

  /**
   * A report whose commits were refused: the accelerators it spawned that are not in the database
   * are stopped and forgotten, and, if the inventory itself was refused (`before`), the inventory
   * in memory is the previous one again.
   */
  private unapply(created: readonly AcceleratorActor[], before: DeviceT[] | undefined): void {
    let forgotten = 0;
    for (const a of created) {
      if (this.accelerators.get(a.id) !== a || a.everCommitted) continue;
      a.stop();
      this.accelerators.delete(a.id);
      forgotten++;
    }
    if (before) this.devices = before;
    if (forgotten > 0 || before) {
      this.opts.log.warn({ host: this.name, forgotten }, 'an inventory was not committed: its new accelerators are forgotten until the agent reports again');
    }
  }

  /** Tells every accelerator of this host that the host is lost or back. */
  broadcast(event: { type: 'HOST_LOST' } | { type: 'HOST_BACK' }): void {
    for (const a of this.accelerators.values()) a.system(event);
  }

  private spawn(spec: AcceleratorSpec, record?: AcceleratorRecord): AcceleratorActor {
    this.runtime ??= {
      logic: this.opts.logic.accelerator,
      journal: this.opts.journal,
      hub: this.opts.hub,
      log: this.opts.log,
      onCrash: (a, err) => this.restart(a, err),
      passivation: this.opts.passivation,
    };
    const actor = new AcceleratorActor({ spec, record, runtime: this.runtime });
    this.accelerators.set(spec.deployable.uuid, actor);
    return actor;
  }

  /** Supervision: a crashed child comes back from its last committed record. */
  private restart(crashed: AcceleratorActor, err: unknown): void {
    const reason = err instanceof Error ? err.message : String(err);
    this.opts.log.error({ err, host: this.name, acceleratorId: crashed.id }, 'accelerator actor crashed; restarting from its last committed snapshot');
    this.restarts.push({ id: crashed.id, reason, at: new Date().toISOString() });
    const record = crashed.lastCommitted;
    queueMicrotask(() => {
      crashed.stop();
      const fresh = this.spawn({ host: this.name, device: deviceOf(this.devices, crashed.id), deployable: crashed.deployable }, record);
      if (crashed.missing) fresh.missing = true;
      fresh.unobserved = crashed.unobserved;
    });
  }

  /**
   * Runs a driver operation on this host's agent (`commandAgent`). `driverName` names the driver
   * when the deployable's own name for it may not be the agent's (a card's driver, for a layout).
   */
  runOp(input: DriverOpInput, driverName?: string): Promise<Record<string, unknown>> {
    // A card's layout may be applied for a deployable the host no longer reports: its card's driver is named.
    const driver = driverName ?? this.accelerators.get(input.id)?.deployable.driverName ?? 'unknown';
    return commandAgent(this.opts, input, driver);
  }
}

/** What of a deployable its Placement provider shows: its name, resource class, size and traits. */
function placementFacts(d: DeployableT): string {
  const attrs = d.attributes
    .filter((a) => a.key === 'rc' || a.key.startsWith('trait'))
    .map((a) => `${a.key}=${a.value}`)
    .sort();
  return `${d.name}|${d.attachHandles.length}|${attrs.join(',')}`;
}

function deviceOf(devices: DeviceT[], deployableUuid: string): Omit<DeviceT, 'deployables'> {
  const d = devices.find((dev) => dev.deployables.some((dep) => dep.uuid === deployableUuid));
  if (!d) throw new CyborgError('accelerator.not_found', `no device holds deployable ${deployableUuid}`);
  const { deployables: _d, ...device } = d;
  return device;
}

/**
 * The report with each deployable's kept provider (`rpUuid`, an adopted Cyborg record's) carried
 * over: agents never know it, and without it the next report would move the accelerator to the
 * provider its name gives — one provider deleted, another created under Nova's allocations.
 */
function keepingProviders(devices: DeviceT[], keptOf: (deployableUuid: string) => string | undefined): DeviceT[] {
  if (!devices.some((d) => d.deployables.some((x) => !x.rpUuid && keptOf(x.uuid)))) return devices;
  return devices.map((d) => ({
    ...d,
    deployables: d.deployables.map((x) => {
      const rp = x.rpUuid ?? keptOf(x.uuid);
      return rp ? { ...x, rpUuid: rp } : x;
    }),
  }));
}

function specsOf(host: string, devices: DeviceT[]): AcceleratorSpec[] {
  return devices
    .filter((d) => !d.stub)
    .flatMap((d) => {
      const { deployables, ...device } = d;
      return deployables.map((deployable) => ({ host, device, deployable }));
    });
}
