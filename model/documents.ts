import { Type, type Static } from '@sinclair/typebox';

/** A device profile as stored (the `device_profiles` collection; db/ maps it to its own table). */
export const DeviceProfileDocSchema = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  /** Cyborg's request groups: each a map `resources:RC` / `trait:T` / `accel:k` → string. */
  groups: Type.Array(Type.Record(Type.String(), Type.String())),
  createdAt: Type.String(),
  updatedAt: Type.Union([Type.String(), Type.Null()]),
});

/** An attribute an operator added to a deployable (collection `attributes`; discovered ones are not stored). */
export const AttributeDocSchema = Type.Object({
  uuid: Type.String(),
  deployableUuid: Type.String(),
  key: Type.String(),
  value: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.Union([Type.String(), Type.Null()]),
});

export const DeviceStatusSchema = Type.Union([Type.Literal('enabled'), Type.Literal('maintaining')]);

/** Cyborg's device maintenance flag (collection `device_status`); a device without one is `enabled`. */
export const DeviceStatusDocSchema = Type.Object({
  uuid: Type.String(),
  status: DeviceStatusSchema,
  updatedAt: Type.String(),
});

export type DeviceProfileDoc = Static<typeof DeviceProfileDocSchema>;
export type AttributeDoc = Static<typeof AttributeDocSchema>;
export type DeviceStatusDoc = Static<typeof DeviceStatusDocSchema>;

/** What the API needs of the stored documents (the conductor's store, or a remote client of it). */
export interface Documents {
  listProfiles(): DeviceProfileDoc[];
  getProfile(uuid: string): DeviceProfileDoc | undefined;
  profileByName(name: string): DeviceProfileDoc | undefined;
  /** Throws `device_profile.conflict` when the name is taken (also by a create still in flight). */
  createProfile(doc: DeviceProfileDoc): Promise<DeviceProfileDoc>;
  deleteProfile(uuid: string): Promise<void>;
  listAttributes(): AttributeDoc[];
  getAttribute(uuid: string): AttributeDoc | undefined;
  createAttribute(doc: AttributeDoc): Promise<AttributeDoc>;
  deleteAttribute(uuid: string): Promise<void>;
  deviceStatus(uuid: string): DeviceStatusDoc['status'];
  setDeviceStatus(uuid: string, status: DeviceStatusDoc['status']): Promise<void>;
  /** Changes whenever a device status changes (for caches of device lists). */
  readonly statusGeneration: number;
}
