export type { Bus, MessageHandler, RequestHandler, RequestOptions, SubscribeOptions, Unsubscribe } from './bus.js';
export { subjectMatches } from './bus.js';
export { InProcessBus } from './in-process.js';
export { Subjects, token, type EventKind } from './subjects.js';
export * as Msg from './schemas.js';
export type {
  AttachHandleT, DeployableT, DeviceT, RegisterMsg, InventoryMsg, HeartbeatMsg, CommandMsg, CommandReplyMsg,
  TelemetryMsg, TransitionEventMsg,
} from './schemas.js';
