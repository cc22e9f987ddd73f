import { mkdir, readFile, rename } from 'node:fs/promises';
import { writeAtomic, type BoundHandle } from '../../drivers/index.js';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CommandReplyMsg } from '../../bus/index.js';
import type { AgentMemory } from './agent.js';
import type { DeviceT } from '../../model/index.js';

/** The on-disk format. Bump `version` on any change; an unknown version is set aside, not trusted. */
export interface AgentCacheFile {
  version: 1;
  host: string;
  /** Increments on every agent start: the conductor tells a restart from a late message by it. */
  epoch: number;
  drivers: { name: string; version: string }[];
  inventorySeq: number;
  devices: DeviceT[];
  /** Results of driver commands by idempotency key, oldest first (bounded). */
  commands: [string, { reply: CommandReplyMsg; at: string }][];
  /**
   * Attach handles bound by a successful attach and not yet detached: handle uuid → deployable
   * uuid. What a driver made for them (an mdev) is gone after a reboot; the agent hands them back
   * (restoreBound). Absent in files written before it existed (read as none), so no version bump.
   */
  bound?: [string, string][];
}

const VERSION = 1;
const MAX_COMMANDS = 1_000;

/**
 * The agent's local cache: last inventory, installed drivers, epoch, and the result of every
 * recent command by idempotency key — so that a restarted agent resumes (epoch + 1), and a
 * command repeated after a restart returns its earlier result instead of running twice.
 * Written atomically (temp file, fsync, rename, fsync of the directory), one write at a time.
 */
export class AgentCache implements AgentMemory {
  private data: AgentCacheFile;
  private commands: Map<string, { reply: CommandReplyMsg; at: string }>;
  private bound: Map<string, string>;
  private chain: Promise<void> = Promise.resolve();

  private constructor(
    readonly path: string,
    data: AgentCacheFile,
  ) {
    this.data = data;
    this.commands = new Map(data.commands);
    this.bound = new Map(data.bound ?? []);
  }

  /**
   * Opens the cache of `host` under `dir`, counts this start (epoch + 1) and saves at once, so
   * that two starts never share an epoch even if the agent dies before its first report.
   */
  static async open(dir: string, host: string, drivers: { name: string; version: string }[], unbound: Logger): Promise<AgentCache> {
    // `host` bound here, as the agent binds it: given by a caller too, a line would carry it twice.
    const log = unbound.child({ host });
    await mkdir(dir, { recursive: true });
    const path = join(dir, `agent-${Buffer.from(host).toString('base64url')}.json`);
    const previous = await read(path, host, log);
    const data: AgentCacheFile = previous
      ? { ...previous, epoch: previous.epoch + 1, drivers }
      : { version: VERSION, host, epoch: 0, drivers, inventorySeq: 0, devices: [], commands: [] };
    const cache = new AgentCache(path, data);
    await cache.save();
    log.info({ epoch: data.epoch, devices: data.devices.length, commands: data.commands.length, path, resumed: Boolean(previous) }, 'agent cache opened');
    return cache;
  }

  get epoch(): number {
    return this.data.epoch;
  }

  get devices(): DeviceT[] {
    return this.data.devices;
  }

  commandResult(key: string): CommandReplyMsg | undefined {
    return this.commands.get(key)?.reply;
  }

  recordCommand(key: string, reply: CommandReplyMsg): Promise<void> {
    this.commands.set(key, { reply, at: new Date().toISOString() });
    while (this.commands.size > MAX_COMMANDS) this.commands.delete(this.commands.keys().next().value!);
    return this.save();
  }

  /** An attach handle bound (attach) or given back (detach) on this host. */
  recordBinding(op: 'attach' | 'detach', deployableUuid: string, handleUuid: string): Promise<void> {
    if (op === 'attach') this.bound.set(handleUuid, deployableUuid);
    else this.bound.delete(handleUuid);
    return this.save();
  }

  /** The bound handles with their deployables as last reported, by driver name (handles whose deployable is no longer reported are left out). */
  boundHandles(): Map<string, BoundHandle[]> {
    const byUuid = new Map(this.data.devices.flatMap((d) => d.deployables.map((dep) => [dep.uuid, { driver: d.driver, dep }] as const)));
    const out = new Map<string, BoundHandle[]>();
    for (const [handleUuid, depUuid] of this.bound) {
      const found = byUuid.get(depUuid);
      if (!found || !found.dep.attachHandles.some((h) => h.uuid === handleUuid)) continue;
      out.set(found.driver, [...(out.get(found.driver) ?? []), { deployable: found.dep, handleUuid }]);
    }
    return out;
  }

  recordInventory(devices: DeviceT[], seq: number): Promise<void> {
    this.data = { ...this.data, devices, inventorySeq: seq };
    return this.save();
  }

  /** Queues a write of the whole file; resolves once it is durable. */
  save(): Promise<void> {
    const snapshot: AgentCacheFile = { ...this.data, commands: [...this.commands], bound: [...this.bound] };
    const step = this.chain.catch(() => undefined).then(() => writeAtomic(this.path, JSON.stringify(snapshot)));
    this.chain = step;
    return step;
  }
}

async function read(path: string, host: string, log: Logger): Promise<AgentCacheFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err, path }, 'agent cache unreadable; starting fresh');
    return undefined;
  }
  try {
    const data = JSON.parse(text) as AgentCacheFile;
    if (data.version !== VERSION || data.host !== host || !Number.isInteger(data.epoch)) {
      log.warn({ path, version: data.version, cachedHost: data.host }, 'agent cache has another version or host; starting fresh (kept aside)');
      await rename(path, `${path}.v${String(data.version)}.bak`).catch(() => undefined);
      return undefined;
    }
    return data;
  } catch (err) {
    log.warn({ err, path }, 'agent cache is corrupt; starting fresh (kept aside)');
    await rename(path, `${path}.corrupt`).catch(() => undefined);
    return undefined;
  }
}
