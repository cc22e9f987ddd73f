import { DEFAULT_HEALTH_POLICY, type HealthPolicy } from '../../machines/index.js';

/** The conductor's clocks: driver-operation deadlines, host liveness, health hysteresis. */
export interface Timing {
  driverOpTimeoutMs: number;
  /** An FPGA programming's deadline (download, checksum, tool, rollback); absent: DEFAULT_PROGRAM_TIMEOUT_MS. */
  programTimeoutMs?: number;
  staleAfterMs: number;
  lostAfterMs: number;
  /** Health hysteresis (machines/health.ts); absent: DEFAULT_HEALTH_POLICY. */
  healthEnterAfter?: number;
  healthLeaveAfter?: number;
  healthStableMs?: number;
}

/** `[conductor] program_timeout`'s default: above `[glance] timeout` and two `[fpga] program_timeout`s (a program and its rollback). */
export const DEFAULT_PROGRAM_TIMEOUT_MS = 1_800_000;

/**
 * How long the conductor waits for a driver operation: a programming downloads and writes an
 * image (minutes on a real card), every other operation answers within `driverOpTimeoutMs`.
 */
export function opDeadlineMs(timing: Pick<Timing, 'driverOpTimeoutMs' | 'programTimeoutMs'>, op: string | undefined): number {
  return op === 'program' ? (timing.programTimeoutMs ?? DEFAULT_PROGRAM_TIMEOUT_MS) : timing.driverOpTimeoutMs;
}

/** The health hysteresis a conductor's timing configures. */
export function healthPolicyOf(t: Partial<Timing>): HealthPolicy {
  return {
    enterAfter: t.healthEnterAfter ?? DEFAULT_HEALTH_POLICY.enterAfter,
    leaveAfter: t.healthLeaveAfter ?? DEFAULT_HEALTH_POLICY.leaveAfter,
    stableForMs: t.healthStableMs ?? DEFAULT_HEALTH_POLICY.stableForMs,
  };
}
