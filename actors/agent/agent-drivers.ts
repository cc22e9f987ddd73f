import type { Logger } from 'pino';
import type { DriverCommandMsg, DriverCommandReplyMsg, DriverStateMsg } from '../../bus/index.js';
import { canManageLifecycle, canReportServices, type Driver, type DriverRegistry } from '../../drivers/index.js';

/**
 * The agent's side of driver lifecycle: which of its loaded drivers are installed on this host
 * (only those are discovered) and at which version. The conductor keeps the record and hands it
 * back at every registration, so an operator's install / uninstall / update outlives a restart
 * of the agent. A driver the conductor has no record of starts installed, at the version it
 * ships (like Cyborg's `enabled_drivers`).
 */
export class AgentDrivers {
  private readonly state = new Map<string, { installed: boolean; version: string }>();
  private readonly done = new Map<string, Promise<DriverCommandReplyMsg>>();

  constructor(
    private readonly registry: DriverRegistry,
    private readonly host: string,
    /** The agent's, `host` bound. */
    private readonly log: Logger,
  ) {}

  /** The drivers whose devices this host reports now. */
  active(): Driver[] {
    return this.registry.list().filter((d) => this.of(d).installed);
  }

  /** Every loaded driver with its version on this host (what registration reports). */
  info(): { name: string; version: string }[] {
    return this.registry.list().map((d) => ({ name: d.name, version: this.of(d).version }));
  }

  /** Adopts the conductor's record (from the register reply). Nothing runs on the host: the record says what is already there. */
  adopt(recorded: DriverStateMsg[] | undefined): void {
    for (const r of recorded ?? []) {
      if (!this.registry.get(r.name)) continue;
      this.state.set(r.name, { installed: r.installed, version: r.version });
    }
  }

  /**
   * Runs a driver command once per idempotency key; after a change, `rediscover` reports the
   * host's new inventory (an uninstalled driver's accelerators leave it, a reinstalled one's return).
   */
  execute(cmd: DriverCommandMsg, rediscover: () => Promise<unknown>): Promise<DriverCommandReplyMsg> {
    let p = this.done.get(cmd.idempotencyKey);
    if (!p) {
      p = this.run(cmd, rediscover);
      this.done.set(cmd.idempotencyKey, p);
      if (this.done.size > 1_000) this.done.delete(this.done.keys().next().value!);
    }
    return p;
  }

  private of(d: Driver): { installed: boolean; version: string } {
    return this.state.get(d.name) ?? { installed: true, version: d.version };
  }

  private async run(cmd: DriverCommandMsg, rediscover: () => Promise<unknown>): Promise<DriverCommandReplyMsg> {
    const driver = this.registry.get(cmd.driver);
    if (!driver) return { ok: false, code: 'driver.not_found', reason: `driver ${cmd.driver} is not loaded by the agent on ${this.host}` };
    const log = this.log.child({ driver: driver.name, op: cmd.op, key: cmd.idempotencyKey });
    const before = this.of(driver);
    try {
      if (cmd.op === 'services') {
        const services = before.installed && canReportServices(driver) ? await driver.services() : [];
        return { ok: true, ...before, services };
      }
      const req = { key: cmd.idempotencyKey, ...(cmd.version ? { version: cmd.version } : {}) };
      let version = cmd.version ?? before.version;
      if (cmd.op === 'install' && canManageLifecycle(driver)) version = (await driver.installDriver(req)).version;
      if (cmd.op === 'update' && canManageLifecycle(driver)) version = (await driver.updateDriver(req)).version;
      if (cmd.op === 'uninstall' && canManageLifecycle(driver)) await driver.uninstallDriver(req);
      const after = { installed: cmd.op !== 'uninstall' && (cmd.op === 'install' || before.installed), version };
      this.state.set(driver.name, after);
      log.info({ from: before, to: after }, 'driver lifecycle operation done');
      await rediscover().catch((err: unknown) => log.warn({ err }, 'inventory report after a driver change failed; the next periodic discovery sends it'));
      return { ok: true, ...after };
    } catch (err) {
      log.warn({ err }, 'driver lifecycle operation failed');
      return { ok: false, code: 'driver.failed', reason: err instanceof Error ? err.message : String(err) };
    }
  }
}
