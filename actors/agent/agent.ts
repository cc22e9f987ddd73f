import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus, Unsubscribe } from '../../bus/bus.js';
import {
  CommandMessage, CommandReply, HealthMessage, HeartbeatMessage, InventoryMessage, InventoryReply, RegisterMessage, RegisterReply, TelemetryMessage,
  type CommandMsg, type CommandReplyMsg, type HealthMsg,
} from '../../bus/schemas.js';
import { Subjects } from '../../bus/subjects.js';
import { canAttach, canInstall, canProgram, canReportHealth, canReportUsage, canReset, type Driver, type OpRequest } from '../../drivers/driver.js';
import type { DriverRegistry } from '../../drivers/registry.js';
import { DriverCommandMessage, DriverCommandReply } from '../../bus/driver-schemas.js';
import { AgentDrivers } from './agent-drivers.js';
import type { DeployableT, DeviceT } from '../../model/index.js';

/** The reply of a command that succeeded with nothing to report: kept once for all of them. */
const DONE_EMPTY: CommandReplyMsg = Object.freeze({ ok: true as const, result: Object.freeze({}) });

export interface AgentOptions {
  host: string;
  bus: Bus;
  drivers: DriverRegistry;
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
  /** What survives a restart: last inventory and command results (actors/agent-cache.ts). */
  memory?: AgentMemory;
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
  private devices: DeviceT[] = [];
  /** Deployables by uuid, rebuilt with `devices`: a command must not scan the whole inventory. */
  private deployables = new Map<string, DeployableT>();
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
  /** Which loaded drivers are installed on this host, at which version (install-driver & co.). */
  readonly driverStates: AgentDrivers;

  constructor(private readonly opts: AgentOptions) {
    this.epoch = opts.epoch ?? 0;
    this.driverStates = new AgentDrivers(opts.drivers, opts.host, opts.log);
    // Until discovery runs again, commands find their deployables in the last cached inventory.
    this.setDevices(opts.memory?.devices ?? []);
  }

  get host(): string {
    return this.opts.host;
  }

  async start(): Promise<void> {
    const { bus, host } = this.opts;
    this.subs.push(bus.respond(Subjects.command(host), CommandMessage, CommandReply, (cmd) => this.execute(cmd)));
    this.subs.push(bus.respond(Subjects.driverCommand(host), DriverCommandMessage, DriverCommandReply, (cmd) => this.driverStates.execute(cmd, () => this.discoverAndReport())));
    await this.register();
    // Heartbeats start at once: a large first inventory must not make the host look stale.
    this.timers.push(setInterval(() => this.heartbeat(), this.opts.heartbeatIntervalMs));
    await this.discoverAndReport();
    this.timers.push(
      setInterval(() => void this.discoverAndReport().catch((err: unknown) => this.opts.log.warn({ err, host }, 'periodic discovery failed')), this.opts.discoveryIntervalMs),
    );
    if (this.opts.healthIntervalMs) {
      this.timers.push(setInterval(() => void this.checkHealth(), this.opts.healthIntervalMs));
    }
    if (this.opts.telemetryIntervalMs) {
      this.timers.push(setInterval(() => void this.telemetry(), this.opts.telemetryIntervalMs));
    }
    for (const t of this.timers) t.unref();
    this.opts.log.info({ host, agentId: this.agentId, drivers: this.opts.drivers.list().map((d) => d.name) }, 'agent started');
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    for (const u of this.subs) u();
    await Promise.allSettled([...this.doneBefore.values(), ...this.done.values()]);
  }

  async register(): Promise<void> {
    const reply = await this.opts.bus.request(Subjects.report('register', this.opts.host), RegisterMessage, RegisterReply, {
      host: this.opts.host,
      agentId: this.agentId,
      drivers: this.driverStates.info(),
      epoch: this.epoch,
    }, { timeoutMs: this.opts.requestTimeoutMs ?? 10_000 });
    this.driverStates.adopt(reply.drivers);
  }

  /** Runs every driver's discovery and sends the full snapshot. */
  async discoverAndReport(): Promise<DeviceT[]> {
    const all: DeviceT[] = [];
    for (const d of this.driverStates.active()) {
      try {
        all.push(...await d.discover());
      } catch (err) {
        this.opts.log.error({ err, host: this.opts.host, driver: d.name }, 'discovery failed; its devices are left out of this report');
      }
    }
    this.setDevices(all);
    await this.opts.memory?.recordInventory(all, this.seq + 1);
    await this.opts.bus.request(Subjects.report('inventory', this.opts.host), InventoryMessage, InventoryReply, {
      host: this.opts.host, agentId: this.agentId, epoch: this.epoch, seq: ++this.seq, devices: all,
    }, { timeoutMs: this.opts.requestTimeoutMs ?? 10_000 });
    return all;
  }

  heartbeat(): void {
    this.opts.bus.publish(Subjects.report('heartbeat', this.opts.host), HeartbeatMessage, {
      host: this.opts.host, agentId: this.agentId, epoch: this.epoch, seq: ++this.seq, sentAt: Date.now(),
    });
  }

  /**
   * Asks every active driver that can tell for its devices' health and sends one message for the
   * host. A driver whose check fails says nothing this time: a missing answer is no verdict on
   * its devices (a hung driver shows in its operations, not as a quarantine of every device).
   */
  async checkHealth(): Promise<HealthMsg['checks']> {
    const checks: HealthMsg['checks'] = [];
    for (const d of this.driverStates.active()) {
      if (!canReportHealth(d)) continue;
      try {
        for (const h of await d.health()) {
          checks.push({ deployableUuid: h.deployableUuid, healthy: h.healthy, ...(h.healthy ? {} : { severity: h.severity ?? 'transient', reason: h.reason ?? 'unhealthy' }) });
        }
      } catch (err) {
        this.opts.log.warn({ err, host: this.opts.host, driver: d.name }, 'health check failed; its devices are left out of this report');
      }
    }
    if (checks.length > 0) {
      this.opts.bus.publish(Subjects.report('health', this.opts.host), HealthMessage, { host: this.opts.host, agentId: this.agentId, at: Date.now(), checks });
    }
    return checks;
  }

  private async telemetry(): Promise<void> {
    const usage = [];
    for (const d of this.opts.drivers.list()) if (canReportUsage(d)) usage.push(...await d.usage());
    this.opts.bus.publish(Subjects.telemetry(this.opts.host), TelemetryMessage, { host: this.opts.host, at: Date.now(), usage });
  }

  /** Executes a command once per idempotency key. */
  execute(cmd: CommandMsg): Promise<CommandReplyMsg> {
    const key = cmd.idempotencyKey;
    const seen = this.done.get(key) ?? this.doneBefore.get(key);
    if (seen) return Promise.resolve(seen);
    // A result kept from before a restart is the answer: the operation is not repeated.
    const kept = this.opts.memory?.commandResult(key);
    const memory = this.opts.memory;
    const p = kept ? Promise.resolve(kept) : memory ? this.run(cmd).then(async (r) => (await memory.recordCommand(key, r), r)) : this.run(cmd);
    this.done.set(key, p);
    p.then((reply) => this.remember(key, p, reply), () => undefined);
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
    const driver = this.opts.drivers.get(cmd.driver);
    if (!driver) return { ok: false, code: 'driver.not_found', reason: `driver ${cmd.driver} is not installed on ${this.opts.host}` };
    const deployable = this.deployables.get(cmd.deployableUuid);
    if (!deployable) return { ok: false, code: 'accelerator.not_found', reason: `no deployable ${cmd.deployableUuid} on ${this.opts.host}` };
    const req: OpRequest = { key: cmd.idempotencyKey, deployable, params: cmd.params };
    // Bindings per line, not a child logger per operation: one is built for every command.
    const about = { host: this.opts.host, driver: driver.name, acceleratorId: deployable.uuid, op: cmd.op };
    try {
      const result = await dispatch(driver, cmd.op, req);
      if ((cmd.op === 'attach' || cmd.op === 'detach') && typeof cmd.params.handleUuid === 'string') await this.opts.memory?.recordBinding?.(cmd.op, deployable.uuid, cmd.params.handleUuid);
      this.opts.log.info(about, 'driver operation done');
      return { ok: true, result };
    } catch (err) {
      this.opts.log.warn({ ...about, err }, 'driver operation failed');
      return { ok: false, code: 'driver.failed', reason: err instanceof Error ? err.message : String(err) };
    }
  }
}

async function dispatch(driver: Driver, op: CommandMsg['op'], req: OpRequest): Promise<Record<string, unknown>> {
  switch (op) {
    case 'install': return canInstall(driver) ? driver.install(req) : {};
    case 'uninstall': return canInstall(driver) ? driver.uninstall(req) : {};
    case 'program':
      if (!canProgram(driver)) throw new Error(`driver ${driver.name} cannot program devices`);
      return driver.program(req);
    case 'attach': return canAttach(driver) ? driver.prepareAttach(req) : {};
    case 'detach': return canAttach(driver) ? driver.releaseAttach(req) : {};
    // A driver without a reset ability has nothing to reset: the conductor clears the health.
    case 'reset': return canReset(driver) ? driver.reset(req) : {};
    default: throw new Error(`unknown operation ${String(op)}`);
  }
}
