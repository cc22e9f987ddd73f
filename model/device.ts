import { Type, type Static } from '@sinclair/typebox';

/**
 * The device model every room shares, after Cyborg's driver object model: device → deployable →
 * attribute / attach handle, with a control path id. Drivers report it, the agent sends it in
 * inventory messages, the conductor and the database keep it, the API and the UI show it. The
 * schemas validate it wherever it crosses a process boundary.
 */
export const AttachHandle = Type.Object({
  uuid: Type.String(),
  attachType: Type.Union([Type.Literal('PCI'), Type.Literal('MDEV'), Type.Literal('TEST_PCI')]),
  attachInfo: Type.String({ description: 'JSON text, Cyborg\'s attach_info' }),
  inUse: Type.Boolean(),
});

export const Attribute = Type.Object({ key: Type.String(), value: Type.String() });

export const Deployable = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  numAccelerators: Type.Integer({ minimum: 0 }),
  driverName: Type.String(),
  attributes: Type.Array(Attribute),
  attachHandles: Type.Array(AttachHandle),
});

export const DeviceType = Type.Union(['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD'].map((t) => Type.Literal(t)));

export const Device = Type.Object({
  uuid: Type.String(),
  type: DeviceType,
  vendor: Type.String(),
  model: Type.String(),
  stdBoardInfo: Type.String(),
  vendorBoardInfo: Type.String(),
  stub: Type.Boolean(),
  controlPath: Type.Object({ type: Type.Literal('PCI'), info: Type.String() }),
  driver: Type.String(),
  deployables: Type.Array(Deployable),
});

/** One service a backend offers on one device: a virtual function, an mdev type, a programmed function. */
export const BackendServiceSchema = Type.Object({
  /** Stable: derived from host, PCI address and service name. */
  id: Type.String(),
  deviceUuid: Type.String(),
  address: Type.String({ description: 'PCI address of the card (its physical function)' }),
  kind: Type.Union([Type.Literal('vf'), Type.Literal('mdev_type'), Type.Literal('function'), Type.Literal('passthrough')]),
  name: Type.String(),
  /** How many more can be used now (free VFs, available mdev instances); absent when not countable. */
  available: Type.Optional(Type.Integer({ minimum: 0 })),
  /** How many exist in all (VFs enabled, mdevs created + available). */
  total: Type.Optional(Type.Integer({ minimum: 0 })),
  details: Type.Record(Type.String(), Type.String()),
});

export type AttachHandleT = Static<typeof AttachHandle>;
export type AttributeT = Static<typeof Attribute>;
export type DeployableT = Static<typeof Deployable>;
export type DeviceT = Static<typeof Device>;
export type BackendService = Static<typeof BackendServiceSchema>;
