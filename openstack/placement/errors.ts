import { CyborgError } from '../../errors/index.js';

/**
 * Placement's own stable error codes (placement/errors.py), as its error bodies carry them:
 * `{"errors": [{"status": 409, "code": "placement.concurrent_update", "detail": ...}]}`.
 * Anything Placement sends that is not listed here keeps its string as is.
 */
export const PlacementCodes = {
  undefined: 'placement.undefined_code',
  concurrentUpdate: 'placement.concurrent_update',
  duplicateName: 'placement.duplicate_name',
  inventoryInUse: 'placement.inventory.inuse',
  providerInUse: 'placement.resource_provider.inuse',
  cannotDeleteParent: 'placement.resource_provider.cannot_delete_parent',
  providerNotFound: 'placement.resource_provider.not_found',
} as const;

export type PlacementCode = (typeof PlacementCodes)[keyof typeof PlacementCodes] | (string & {});

export interface PlacementErrorDetails {
  method: string;
  path: string;
  /** HTTP status Placement answered with; 0 when it did not answer at all. */
  httpStatus: number;
  /** Placement's error code (`placement.concurrent_update`, …); null when it did not answer. */
  placementCode: PlacementCode | null;
  requestId?: string;
}

/**
 * A Placement call that failed. `code` is ours (`placement.unavailable` when Placement could
 * not be reached or timed out, `placement.request_failed` when it answered with an error);
 * `placementCode` and `httpStatus` say what Placement itself said.
 */
export class PlacementError extends CyborgError {
  readonly method: string;
  readonly path: string;
  readonly httpStatus: number;
  readonly placementCode: PlacementCode | null;
  readonly requestId: string | undefined;

  constructor(message: string, d: PlacementErrorDetails, options?: { cause?: unknown }) {
    super(d.httpStatus === 0 ? 'placement.unavailable' : 'placement.request_failed', message, { ...d }, options);
    this.name = 'PlacementError';
    this.method = d.method;
    this.path = d.path;
    this.httpStatus = d.httpStatus;
    this.placementCode = d.placementCode;
    this.requestId = d.requestId;
  }

  /** Placement did not answer, or answered 5xx: worth retrying later, says nothing about our data. */
  get unavailable(): boolean {
    return this.httpStatus === 0 || this.httpStatus >= 500;
  }

  /** A stale provider generation: re-read and retry. */
  get concurrentUpdate(): boolean {
    return this.httpStatus === 409 && this.placementCode === PlacementCodes.concurrentUpdate;
  }

  get notFound(): boolean {
    return this.httpStatus === 404;
  }
}

export function isPlacementError(err: unknown): err is PlacementError {
  return err instanceof PlacementError;
}
