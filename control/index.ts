// The door of control/: other rooms import it through this file only (test/architecture.test.ts).
export { type LeaseView, remoteArqCalls, type RemoteArqCalls } from './arq-ops.js';
export { callConductor, RemoteControlPlane, resultOf } from './client.js';
export { isBusy } from './driver-client.js';
export {
  type ArgsOf,
  ARQ_HOLDS_MAX,
  checkedCall,
  type CheckedCall,
  checkedReply,
  ControlCalls,
  ControlError,
  type ControlOp,
  ControlReply,
  type ControlReplyMsg,
  ControlRequest,
  type ControlRequestMsg,
  type ReplyOf,
  SnapshotCursor,
  type SnapshotCursorMsg,
  SnapshotPage,
  type SnapshotPageMsg,
  ViewsBatch,
  type ViewsBatchMsg,
} from './messages.js';
export { checkPayload, DEFAULT_MAX_PAYLOAD, maxPayloadOf, packBySizes, wireSize } from './payload.js';
export { ReadModel } from './read-model.js';
export { type ResponderOptions, serveControlPlane, type ServedConductor } from './responder.js';
export { type PageOptions, snapshotPage, type SnapshotSource } from './snapshot.js';
export { type PublishedConductor, ViewPublisher, VIEWS_BEACON_MS } from './view-publisher.js';
export { type PageFetcher, pageOutOfOrder, type SyncState, ViewSync, type ViewSyncOptions } from './view-sync.js';
export { ViewCheck, type ViewCheckOptions, viewDigest } from './view-check.js';
