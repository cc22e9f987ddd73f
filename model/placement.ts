/** How far an accelerator's Placement resource provider matches its view. */
export type PlacementSyncState = 'in_sync' | 'pending' | 'error';

/** One accelerator's Placement sync state, as the API shows it. */
export interface PlacementStatusView {
  status: PlacementSyncState;
  reason: string | null;
  /** What was not done (or done differently) to protect allocations. */
  flags: { code: string; message: string }[];
  /** The provider's generation as last seen; null when it does not exist. */
  generation: number | null;
  syncedAt: string | null;
}
