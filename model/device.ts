import { Type, type Static } from '@sinclair/typebox';
import { BOUND, BoundedName, BoundedText, BoundedUuid } from './bounds.js';

/**
 * The device model every room shares, after Cyborg's driver object model: device → deployable →
 * attribute / attach handle, with a control path id. Drivers report it, the agent sends it in
 * inventory messages, the conductor and the database keep it, the API and the UI show it. The
 * schemas validate it wherever it crosses a process boundary.
 */
export const AttachHandle = Type.Object({
  uuid: BoundedUuid(),
  attachType: Type.Union([Type.Literal('PCI'), Type.Literal('MDEV'), Type.Literal('TEST_PCI')]),
  attachInfo: BoundedName({ description: "JSON text, Cyborg's attach_info" }),
  inUse: Type.Boolean(),
});

export const Attribute = Type.Object({ key: BoundedName(), value: BoundedText(BOUND.text) });

// The item bounds are far above any card (an SR-IOV NIC has at most a few hundred VFs) and keep
// one forged report from spawning millions of rows.
export const Deployable = Type.Object({
  uuid: BoundedUuid(),
  name: BoundedName(),
  numAccelerators: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }),
  driverName: BoundedName(),
  attributes: Type.Array(Attribute, { maxItems: 256 }),
  attachHandles: Type.Array(AttachHandle, { maxItems: 4096 }),
  /**
   * Its Placement provider when that is not uuid3(DNS, name): a provider another naming made and
   * Nova's allocations sit on (an adopted Cyborg record, docs/adopt.md "Xilinx Alveo U280/U50").
   * Drivers never set it; the conductor keeps it across reports.
   */
  rpUuid: Type.Optional(BoundedUuid()),
});

/**
 * What a card says about itself, where it says it: NVIDIA's GPU UUID (nvidia-smi), a NIC's MAC
 * address, the PCIe Device Serial Number of its config space. A different card in the same slot
 * reads differently, so the conductor can tell a replacement from the card it knew. Absent where
 * the hardware (or its tool) gives none: then a card swapped in the slot cannot be told apart.
 */
export const HardwareIdentity = Type.Object({
  serial: BoundedName(),
  /** Where it was read: `nvidia-smi uuid`, `mac`, `pcie dsn`. */
  source: BoundedName(),
});

export const DeviceType = Type.Union(['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD'].map((t) => Type.Literal(t)));

export const Device = Type.Object({
  uuid: BoundedUuid(),
  type: DeviceType,
  vendor: BoundedName(),
  model: BoundedName(),
  stdBoardInfo: BoundedText(BOUND.text),
  vendorBoardInfo: BoundedText(BOUND.text),
  stub: Type.Boolean(),
  controlPath: Type.Object({ type: Type.Literal('PCI'), info: BoundedName() }),
  driver: BoundedName(),
  deployables: Type.Array(Deployable, { maxItems: 4096 }),
  /** What the card says about itself (HardwareIdentity); absent where the hardware gives no serial. */
  identity: Type.Optional(HardwareIdentity),
  /**
   * Present when the agent could not observe the device this time (its tool failed): the record
   * is the last one observed, and this is why, in the tool's own words. The conductor keeps the
   * device and shows its health as `unknown` instead of removing it.
   */
  unobserved: Type.Optional(BoundedText(BOUND.text)),
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
export type HardwareIdentityT = Static<typeof HardwareIdentity>;
export type BackendService = Static<typeof BackendServiceSchema>;

/**
 * Devices as the inventory rows keep them: Cyborg's columns, no `identity` (the card's serial is
 * kept with each accelerator's record, where the conductor compares it: actors/conductor/identity.ts).
 * The same array when none carries one.
 */
export function withoutIdentity(devices: DeviceT[]): DeviceT[] {
  if (!devices.some((d) => d.identity)) return devices;
  return devices.map((d) => {
    if (!d.identity) return d;
    const { identity: _identity, ...rest } = d;
    return rest;
  });
}
