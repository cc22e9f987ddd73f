// The door of bus/: other rooms import it through this file only (test/architecture.test.ts).
export { type Bus, type MessageHandler, type RequestHandler, type RequestOptions, subjectMatches, type SubscribeOptions, type Unsubscribe } from './bus.js';
export { answer, decodeMessage, ERROR_KEY, errorReply, readReply } from './decode.js';
export {
  DriverCommandMessage,
  type DriverCommandMsg,
  DriverCommandOp,
  DriverCommandReply,
  type DriverCommandReplyMsg,
  type DriverStateMsg,
} from './driver-schemas.js';
export { InProcessBus } from './in-process.js';
export { natsAuthError, type NatsAuthSettings, natsConnectSettings, type NatsConnectSettings } from './nats-auth.js';
export { type BusErrorSink, connectBus, connectNats, type ConnectOptions, NATS_RECONNECT_WAIT_MS, NatsBus, type NatsBusOptions } from './nats.js';
export {
  checker,
  CommandMessage,
  type CommandMsg,
  CommandOp,
  CommandReply,
  type CommandReplyMsg,
  DriverInfo,
  firstError,
  HealthMessage,
  type HealthMsg,
  HeartbeatMessage,
  type HeartbeatMsg,
  HostObservation,
  type HostObservationMsg,
  InventoryMessage,
  type InventoryMsg,
  InventoryReply,
  MAX_DEVICES_PER_HOST,
  MAX_DRIVERS_PER_HOST,
  MAX_OBSERVED_PER_HOST,
  ProgressMessage,
  type ProgressMsg,
  RegisterMessage,
  type RegisterMsg,
  RegisterReply,
  TelemetryMessage,
  type TelemetryMsg,
  USAGE_PER_MESSAGE,
} from './schemas.js';
export { type EventKind, reportHost, type ReportKind, Subjects, token } from './subjects.js';
