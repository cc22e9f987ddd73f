// A driver's lifecycle machine (machines/driver.ts) woken from its record for one install, uninstall
// or update, and put back to rest as a record: between operations no machine runs for a driver.
import type { Logger } from 'pino';
import { fromPromise } from 'xstate';
import type { Journal, MachineRecord } from '../runtime/index.js';
import { MachineHost } from '../runtime/index.js';
import { type DriverContext, driverMachine, type DriverOpOutcome, type DriverOpRequest, DriverStates } from '../../machines/index.js';
import type { RequestMeta } from '../../model/index.js';

export type DriverOp = 'install' | 'uninstall' | 'update';

/** What is persisted per (host, driver): the outcome of the last lifecycle operation. */
export interface DriverRecord {
  id: string;
  host: string;
  name: string;
  version: string;
  installed: boolean;
  lastError: { op: string; reason: string; at: string } | null;
  updatedAt: string;
}

const EVENT = { install: 'INSTALL', uninstall: 'UNINSTALL', update: 'UPDATE' } as const;

type DriverLogic = ReturnType<typeof driverMachine.provide>;

/** One operation under way on one driver: its machine, who asked, and how it failed if it did. */
export interface DriverRun {
  m: MachineHost<DriverLogic>;
  meta: RequestMeta;
  error?: unknown;
  /** Settles once the machine rests again and its record is committed. */
  done: Promise<void>;
  finish(outcome: Promise<void>): void;
}

export interface DriverRunsOptions {
  journal: Journal;
  log: Logger;
  /** The machine's `driverOp`: the operation on the host's agent. */
  operate: (req: DriverOpRequest) => Promise<DriverOpOutcome>;
  /** Commits records and keeps them as the drivers' own. */
  persist: (records: DriverRecord[]) => Promise<void>;
}

/** The drivers whose lifecycle machine runs now; the others rest as their record. */
export class DriverRuns {
  private readonly running = new Map<string, DriverRun>();
  private readonly logic: DriverLogic;

  constructor(private readonly opts: DriverRunsOptions) {
    this.logic = driverMachine.provide({
      actors: { driverOp: fromPromise<DriverOpOutcome, DriverOpRequest>(({ input }) => opts.operate(input)) },
    });
  }

  get(id: string): DriverRun | undefined {
    return this.running.get(id);
  }

  /** Runs one operation to its end; the run says how it failed, if it did. */
  async perform(op: DriverOp, rec: DriverRecord, version: string | undefined, meta: RequestMeta): Promise<DriverRun> {
    const run = this.start(rec, meta);
    try {
      run.m.send({ type: EVENT[op], ...(version ? { version } : {}) }, meta);
      await run.done;
    } finally {
      this.running.delete(rec.id);
      run.m.stop();
    }
    return run;
  }

  /**
   * Wakes the driver's lifecycle machine from its record. When the machine rests again its record
   * is committed before the caller hears of it; a failed operation's record is written too, but
   * its caller hears the failure, not a failed write.
   */
  private start(rec: DriverRecord, meta: RequestMeta): DriverRun {
    const { journal, log } = this.opts;
    let finish!: (outcome: Promise<void>) => void;
    const done = new Promise<void>((resolve, reject) => {
      finish = (outcome) => outcome.then(resolve, reject);
    });
    const run: DriverRun = {
      meta,
      done,
      finish,
      m: new MachineHost({
        machine: this.logic,
        record: machineRecordOf(rec),
        owner: {
          onTransition: (change, persisted) => {
            // Every step of a driver's install / uninstall / update is in the audit log, with who asked.
            journal
              .commit([{ type: 'transition', record: { kind: 'driver', id: rec.id, host: rec.host, ...change } }])
              .catch((err: unknown) => log.warn({ err, host: rec.host, driver: rec.name }, 'driver transition not logged'));
            if (change.to !== DriverStates.installed && change.to !== DriverStates.uninstalled) return;
            const written = this.opts.persist([driverRecordOf(persisted, change.at)]);
            run.finish(run.error !== undefined ? written.catch(() => undefined) : written);
          },
          onCrash: (err) => run.finish(Promise.reject(err)),
        },
      }),
    };
    this.running.set(rec.id, run);
    run.m.start();
    return run;
  }
}

/** A driver's record as its lifecycle machine's. */
function machineRecordOf(r: DriverRecord): MachineRecord<DriverContext> {
  const context: DriverContext = { id: r.id, host: r.host, name: r.name, version: r.version, lastError: r.lastError as DriverContext['lastError'] };
  return { value: r.installed ? 'installed' : 'uninstalled', context };
}

/** The record of a lifecycle machine at rest, stamped `at` (a new failure gets that time too). */
function driverRecordOf(m: MachineRecord<DriverContext>, at: string): DriverRecord {
  const c = m.context;
  return {
    id: c.id,
    host: c.host,
    name: c.name,
    version: c.version,
    installed: m.value === DriverStates.installed,
    lastError: c.lastError ? { op: c.lastError.op, reason: c.lastError.reason, at: c.lastError.at ?? at } : null,
    updatedAt: at,
  };
}
