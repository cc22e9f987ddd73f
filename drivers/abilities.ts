import type { Driver, OpRequest, OpResult } from './driver.js';

/**
 * Optional abilities of the vendor drivers, beside those of `driver.ts`, detected at run time the
 * same way: a driver that lacks one simply has no such method.
 */

/** An attach handle an ARQ still holds, as the agent knows it after a restart. */
export interface BoundHandle {
  deployable: OpRequest['deployable'];
  handleUuid: string;
}

/**
 * After a reboot the kernel has forgotten what the driver made for bound ARQs (mdevs, vGPU types
 * of VFs): the agent hands the bound handles back and the driver makes them again. Idempotent.
 */
export interface BoundRestorer {
  restoreBound(bound: readonly BoundHandle[]): Promise<{ restored: string[]; present: string[] }>;
}

/** Progress of a long operation (an FPGA programming), as the tool reports it. */
export interface Progress {
  phase: 'verify' | 'program' | 'rollback' | 'done';
  message: string;
}

/** A programmer that reports progress while it works. */
export interface ProgressProgrammer {
  program(req: OpRequest, opts?: { onProgress?: (p: Progress) => void }): Promise<OpResult>;
}

/** The MIG layout of a GPU, chosen by the operator, applied only while none of its instances is attached. */
export interface MigLayoutManager {
  applyMigLayout(address: string, profiles: readonly string[]): Promise<OpResult>;
  /** Re-applies every remembered layout a reboot lost. */
  reapplyMigLayouts(): Promise<OpResult[]>;
}

/** The VF count of an SR-IOV physical function, changed only while none of its VFs is attached. */
export interface VfCountManager {
  setVfCount(address: string, count: number): Promise<OpResult>;
  /** Re-applies every remembered count a reboot lost. */
  reapplyVfCounts(): Promise<OpResult[]>;
}

export const canRestoreBound = (d: Driver): d is Driver & BoundRestorer => typeof (d as Partial<BoundRestorer>).restoreBound === 'function';
export const canManageMig = (d: Driver): d is Driver & MigLayoutManager => typeof (d as Partial<MigLayoutManager>).applyMigLayout === 'function';
export const canSetVfCount = (d: Driver): d is Driver & VfCountManager => typeof (d as Partial<VfCountManager>).setVfCount === 'function';
