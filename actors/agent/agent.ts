import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BitstreamSource } from '../../openstack/glance/index.js';
import type { Bus, Unsubscribe } from '../../bus/index.js';
import {
  CommandMessage,
  CommandReply,
  HeartbeatMessage,
  InventoryMessage,
  InventoryReply,
  ProgressMessage,
  RegisterMessage,
  RegisterReply,
  type CommandMsg,
  type CommandReplyMsg,
  type HealthMsg,
} from '../../bus/index.js';
import { Subjects } from '../../bus/index.js';
import { canProgram, type Driver, type OpRequest, type Progress, type ProgressProgrammer, type DriverRegistry } from '../../drivers/index.js';
import { BeforeTheCard, programWithImage } from './programming.js';
import { DriverCommandMessage, DriverCommandReply } from '../../bus/index.js';
import { AgentDrivers } from './agent-drivers.js';
import { CARD_OPS, cardOnly, cardUnchanged, dispatch } from './agent-ops.js';
import { discoverHost } from './agent-discovery.js';
import { AgentHealth } from './agent-health.js';
import { AgentTelemetry } from './agent-telemetry.js';
import { UeventSource, type UeventBurst, type UeventSourceOptions } from './uevents.js';
import { withGlobalRequestId } from '../../openstack/request-id.js';
import type { DeployableT, DeviceT } from '../../model/index.js';
import { CyborgError } from '../../errors/index.js';

/** The reply of a command that succeeded with nothing to report: kept once for all of them. */
const DONE_EMPTY: CommandReplyMsg = Object.freeze({ ok: true as const, result: Object.freeze({}) });

export interface AgentOptions {
  host: string;
  bus: Bus;
  /** Where FPGA bitstreams named by Glance id or function id are fetched from ([glance]). */
  images?: BitstreamSource;
  drivers: DriverRegistry;
  /** Without `host`: the agent binds it on every line of its own. */
  log: Logger;
  heartbeatIntervalMs: number;
  discoveryIntervalMs: number;
  /** Conductor request timeout for register / inventory. */
  requestTimeoutMs?: number;
  /** How often each driver's health is checked and sent (`[agent] health_interval_ms`); 0 or absent: never. */
  healthIntervalMs?: number;
  /** Usage telemetry interval; 0 turns it off. */
  telemetryIntervalMs?: number;
  /** Increments on each start of the agent on this host (the cache issue persists it). */
  epoch?: number;
  /** What survives a restart: last inventory and command results (actors/agent/agent-cache.ts). */
  memory?: AgentMemory;
  /** Kernel uevents that start a discovery at once (`[agent] hotplug`); absent: the periodic scan alone. */
  hotplug?: UeventSourceOptions;
  /**
   * libvirt's live domain files (`[agent] libvirt_state_dir`): the attach handles running guests
   * hold are reported, for the conductor to adopt those no record holds. Absent: none looked at.
   */
  guestsDir?: string;
}

/** Where an agent keeps what must survive its restart: the local cache implements it. */
export interface AgentMemory {
  readonly devices: DeviceT[];
  commandResult(key: string): CommandReplyMsg | undefined;
  recordCommand(key: string, reply: CommandReplyMsg): Promise<void>;
  recordInventory(devices: DeviceT[], seq: number): Promise<void>;
  /** A handle bound or given back, so that a driver can make its host side again after a reboot. */
  recordBinding?(op: 'attach' | 'detach', deployableUuid: string, handleUuid: string): Promise<void>;
}

/**
 * The agent of one compute host: runs its drivers' discovery at start and periodically, reports
 * the full inventory to the conductor, heartbeats, broadcasts usage, and executes driver
 * operations on command. Repeating a command with the same idempotency key returns the first
 * answer instead of running the operation twice.
 */
export class Agent {
  readonly agentId = randomUUID();
  private subs: Unsubscribe[] = [];
  private timers: NodeJS.Timeout[] = [];
  private seq = 0;
  /** Whether this session's guests were reported: the conductor compares them once per session, at its first report. */
  private guestsReported = false;
  private devices: DeviceT[] = [];
  /** Deployables by uuid, rebuilt with `devices`: a command must not scan the whole inventory. */
  private deployables = new Map<string, DeployableT>();
  /** Which driver reported each deployable in the last discovery (commands go to it). */
  private readonly discoveredBy = new Map<string, string>();
  /**
   * Commands by idempotency key, in two generations: when the young one fills, it becomes the old
   * one and the old one is dropped. (Deleting a Map's first key per command instead leaves holes
   * that every `keys().next()` walks over again.) A command under way is kept as its promise, an
   * answered one as its reply: a settled promise per remembered command was a fifth of what they
   * cost, and the usual reply — done, nothing to say — is one shared object.
   */
  private done = new Map<string, Promise<CommandReplyMsg> | CommandReplyMsg>();
  private doneBefore = new Map<string, Promise<CommandReplyMsg> | CommandReplyMsg>();
  private readonly epoch: number;
  /** `host` bound here, whoever built the agent: pino repeats a key that a binding and a call both carry. */
  private readonly log: Logger;
  /** Which loaded drivers are installed on this host, at which version (install-driver & co.). */
  readonly driverStates: AgentDrivers;
  private uevents: UeventSource | undefined;
  private readonly health: AgentHealth;
  private readonly usage: AgentTelemetry;
  /** The scheduled discovery under way, and whether another must follow it (a change came meanwhile). */
  private discovering: Promise<void> | undefined;
  private discoverAgain = false;
  private stopped = false;

  constructor(private readonly opts: AgentOptions) {
    this.epoch = opts.epoch ?? 0;
    this.log = opts.log.child({ host: opts.host });
    this.driverStates = new AgentDrivers(opts.drivers, opts.host, this.log);
    const line = { bus: opts.bus, host: opts.host, agentId: this.agentId, log: this.log, stopped: () => this.stopped };
    this.health = new AgentHealth(this.driverStates, line);
    this.usage = new AgentTelemetry(opts.drivers, line);
    // Until discovery runs again, commands find their deployables in the last cached inventory.
    this.setDevices(opts.memory?.devices ?? []);
  }

  get host(): string {
    return this.opts.host;
  }

  async start(): Promise<void> {
    const { bus, host } = this.opts;
    this.subs.push(bus.respond(Subjects.command(host), CommandMessage, CommandReply, (cmd) => this.execute(cmd)));
    this.subs.push(
      bus.respond(Subjects.driverCommand(host), DriverCommandMessage, DriverCommandReply, (cmd) =>
        this.driverStates.execute(cmd, () => this.discoverAndReport()),
      ),
    );
    this.stopped = false;
    await this.register();
    // Heartbeats start at once: a large first inventory must not make the host look stale.
    this.timers.push(setInterval(() => this.heartbeat(), this.opts.heartbeatIntervalMs));
    // Watching starts before the first discovery, so that nothing plugged in during it is missed.
    if (this.opts.hotplug) {
      this.uevents = new UeventSource({ ...this.opts.hotplug, log: this.log, onBurst: (b) => this.hotplugged(b) });
      this.uevents.start();
    }
    await this.discoverAndReport();
    // After the first report: a pushed fault names deployables the conductor knows by then.
    this.health.watch();
    // The periodic scan stays as the safety net of hot-plug: a lost event, a dead udevadm.
    this.timers.push(setInterval(() => this.scheduleDiscovery('periodic'), this.opts.discoveryIntervalMs));
    if (this.opts.healthIntervalMs) {
      this.timers.push(
        setInterval(
          () => void this.checkHealth().catch((err: unknown) => this.log.warn({ err }, 'health report failed; the next one follows')),
          this.opts.healthIntervalMs,
        ),
      );
    }
    if (this.opts.telemetryIntervalMs) {
      this.timers.push(
        setInterval(
          () => void this.telemetry().catch((err: unknown) => this.log.warn({ err }, 'usage telemetry failed; the next one follows')),
          this.opts.telemetryIntervalMs,
        ),
      );
    }
    for (const t of this.timers) t.unref();
    this.log.info({ agentId: this.agentId, drivers: this.opts.drivers.list().map((d) => d.name) }, 'agent started');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const u of this.subs) u();
    await this.uevents?.stop();
    this.uevents = undefined;
    await this.health.stop();
    await Promise.allSettled([...this.doneBefore.values(), ...this.done.values()]);
  }

  async register(): Promise<void> {
    const reply = await this.opts.bus.request(
      Subjects.report('register', this.opts.host),
      RegisterMessage,
      RegisterReply,
      {
        host: this.opts.host,
        agentId: this.agentId,
        drivers: this.driverStates.info(),
        epoch: this.epoch,
      },
      { timeoutMs: this.opts.requestTimeoutMs ?? 10_000 },
    );
    this.driverStates.adopt(reply.drivers);
  }

  /**
   * Runs every driver's discovery and sends the full snapshot, with what the drivers that can
   * tell observe of their devices' host side (mdevs, VFs, MIG layouts): the conductor re-makes
   * from it what a reboot lost for instances that hold handles, cache or no cache.
   */
  async discoverAndReport(): Promise<DeviceT[]> {
    const { drivers: registry, guestsDir } = this.opts;
    const lookAtGuests = guestsDir !== undefined && !this.guestsReported;
    const scope = { log: this.log, registry, discoveredBy: this.discoveredBy, ...(lookAtGuests ? { guestsDir } : {}) };
    const { devices: all, observed, failed } = await discoverHost(this.driverStates.active(), () => this.devices, scope);
    this.setDevices(all);
    await this.opts.memory?.recordInventory(all, this.seq + 1);
    await this.opts.bus.request(
      Subjects.report('inventory', this.opts.host),
      InventoryMessage,
      InventoryReply,
      {
        host: this.opts.host,
        agentId: this.agentId,
        epoch: this.epoch,
        seq: ++this.seq,
        devices: all,
        ...(observed ? { observed } : {}),
        ...(failed.length > 0 ? { unobservedDrivers: failed.slice(0, 64) } : {}),
      },
      { timeoutMs: this.opts.requestTimeoutMs ?? 10_000 },
    );
    if (lookAtGuests) this.guestsReported = true;
    return all;
  }

  /** A burst of kernel events is over: what the host has may have changed. */
  private hotplugged(burst: UeventBurst): void {
    const { events, actions, devices, malformed, catchUp } = burst;
    this.log.info(
      { events, actions, devices, ...(malformed ? { malformed } : {}), ...(catchUp ? { catchUp } : {}) },
      'hot-plug: kernel events; discovering now',
    );
    this.scheduleDiscovery('hot-plug');
  }

  /**
   * Runs a discovery now, or once more right after the one under way: however many bursts and
   * periodic ticks come during a discovery, they make one more, never a queue or two at once.
   */
  private scheduleDiscovery(why: 'periodic' | 'hot-plug'): void {
    if (this.discovering) {
      this.discoverAgain = true;
      return;
    }
    this.discovering = (async () => {
      do {
        this.discoverAgain = false;
        try {
          await this.discoverAndReport();
        } catch (err) {
          this.log.warn({ err }, `${why} discovery failed`);
        }
      } while (this.discoverAgain && !this.stopped);
    })().finally(() => (this.discovering = undefined));
  }

  heartbeat(): void {
    this.opts.bus.publish(Subjects.report('heartbeat', this.opts.host), HeartbeatMessage, {
      host: this.opts.host,
      agentId: this.agentId,
      epoch: this.epoch,
      seq: ++this.seq,
      sentAt: Date.now(),
    });
  }

  /** One health poll, sent (the interval's tick; stories call it too). */
  checkHealth(): Promise<HealthMsg['checks']> {
    return this.health.check();
  }

  /** One usage round, published (the interval's tick; stories call it too). */
  telemetry(): Promise<void> {
    return this.usage.round();
  }

  /** Executes a command once per idempotency key. */
  execute(cmd: CommandMsg): Promise<CommandReplyMsg> {
    const key = cmd.idempotencyKey;
    const seen = this.done.get(key) ?? this.doneBefore.get(key);
    if (seen) return Promise.resolve(seen);
    // A result kept from before a restart is the answer: the operation is not repeated.
    const kept = this.opts.memory?.commandResult(key);
    const memory = this.opts.memory;
    // Glance hears of the request the command is run for (openstack/request-id.ts).
    const run = (): Promise<CommandReplyMsg> => withGlobalRequestId(cmd.requestId, () => this.run(cmd));
    const p = kept ? Promise.resolve(kept) : memory ? run().then(async (r) => (await memory.recordCommand(key, r), r)) : run();
    this.done.set(key, p);
    p.then(
      (reply) => this.remember(key, p, reply),
      () => undefined,
    );
    if (this.done.size >= 10_000) {
      this.doneBefore = this.done;
      this.done = new Map();
    }
    return p;
  }

  /** Keeps an answered command's reply in place of its promise, in whichever generation holds it. */
  private remember(key: string, p: Promise<CommandReplyMsg>, reply: CommandReplyMsg): void {
    const kept = reply.ok && Object.keys(reply.result).length === 0 ? DONE_EMPTY : reply;
    if (this.done.get(key) === p) this.done.set(key, kept);
    else if (this.doneBefore.get(key) === p) this.doneBefore.set(key, kept);
  }

  private setDevices(devices: DeviceT[]): void {
    this.devices = devices;
    this.deployables = new Map(devices.flatMap((d) => d.deployables.map((dep) => [dep.uuid, dep] as const)));
  }

  private async run(cmd: CommandMsg): Promise<CommandReplyMsg> {
    // Cyborg's deployables name their driver as Cyborg does ('intel' for a NIC VF), not always by
    // the driver's own name: the driver that discovered the deployable is the one to run it.
    const discoveredBy = this.discoveredBy.get(cmd.deployableUuid);
    const driver = this.opts.drivers.get(cmd.driver) ?? (discoveredBy ? this.opts.drivers.get(discoveredBy) : undefined);
    if (!driver) return { ok: false, code: 'driver.not_found', reason: `driver ${cmd.driver} is not installed on ${this.opts.host}` };
    // A card's layout is applied by address: the deployable it is asked for may be one the card
    // lost with that layout (a reboot), which the conductor asks to bring back.
    const deployable = this.deployables.get(cmd.deployableUuid) ?? (CARD_OPS.has(cmd.op) ? cardOnly(cmd) : undefined);
    if (!deployable) return { ok: false, code: 'accelerator.not_found', reason: `no deployable ${cmd.deployableUuid} on ${this.opts.host}` };
    let req: OpRequest = { key: cmd.idempotencyKey, deployable, params: cmd.params };
    // Bindings per line, not a child logger per operation: one is built for every command.
    const about = {
      driver: driver.name,
      acceleratorId: deployable.uuid,
      op: cmd.op,
      ...(cmd.requestId ? { requestId: cmd.requestId } : {}),
    };
    try {
      const result = cmd.op === 'program' ? await this.program(driver, cmd, req) : await dispatch(driver, cmd.op, req);
      // The card's devices changed: the conductor hears the new inventory before the answer.
      if (cmd.op === 'mig_layout' || cmd.op === 'vf_count') await this.discoverAndReport();
      if ((cmd.op === 'attach' || cmd.op === 'detach' || cmd.op === 'restore') && typeof cmd.params.handleUuid === 'string') {
        await this.opts.memory?.recordBinding?.(cmd.op === 'detach' ? 'detach' : 'attach', deployable.uuid, cmd.params.handleUuid);
      }
      this.log.info(about, 'driver operation done');
      return { ok: true, result };
    } catch (err) {
      this.log.warn({ ...about, err }, 'driver operation failed');
      const reason = err instanceof Error ? err.message : String(err);
      return {
        ok: false,
        code: 'driver.failed',
        reason,
        ...(cmd.op === 'program' && (err instanceof BeforeTheCard || cardUnchanged(err)) ? { unchanged: true } : {}),
      };
    }
  }

  /** A programming, its image fetched from Glance first when named by id, its steps sent to the conductor as they happen. */
  private program(driver: Driver, cmd: CommandMsg, req: OpRequest): Promise<Record<string, unknown>> {
    const onProgress = (p: Progress): void => {
      this.log.info({ driver: driver.name, acceleratorId: cmd.deployableUuid, phase: p.phase, progress: p.message }, 'programming');
      if (this.stopped) return;
      this.opts.bus.publish(Subjects.progress(this.opts.host), ProgressMessage, {
        host: this.opts.host,
        deployableUuid: cmd.deployableUuid,
        op: 'program',
        key: cmd.idempotencyKey,
        phase: p.phase,
        message: p.message.slice(0, 500),
        at: Date.now(),
      });
    };
    return programWithImage(
      driver,
      req,
      (r, progress) => {
        if (!canProgram(driver)) throw new CyborgError('driver.failed', `driver ${driver.name} cannot program devices`);
        // A driver that reports progress takes the callback (ProgressProgrammer); any other ignores it.
        return (driver.program as ProgressProgrammer['program']).call(driver, r, { onProgress: progress });
      },
      { ...(this.opts.images ? { images: this.opts.images } : {}), drivers: () => this.opts.drivers.list(), onProgress, log: this.log },
    );
  }
}
