import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { timestamps } from './timestamps.js';

/**
 * Cyborg's driver object model as its tables (reference/cyborg-internals.md §2 and §6): a device
 * has one control-path id and its deployables; a deployable has attributes and attach handles.
 * Column names follow Cyborg's so that an operator who knows its schema finds their way.
 * `position` (ours) keeps discovery order, which decides the first free attach handle.
 */
export const Device = defineEntity({
  name: 'Device',
  tableName: 'devices',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    type: p.enum(['GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD'] as const),
    vendor: p.string(),
    model: p.string(),
    stdBoardInfo: p.text(),
    vendorBoardInfo: p.text(),
    hostname: p.string().index(),
    status: p.enum(['enabled', 'maintaining'] as const).default('enabled'),
    // Ours: Cyborg keeps these on the driver object only; we need them to rebuild an inventory.
    driver: p.string(),
    stub: p.boolean().default(false),
    position: p.integer().default(0),
    controlpathIds: () => p.oneToMany(ControlpathId).mappedBy('device'),
    deployables: () => p.oneToMany(Deployable).mappedBy('device'),
    ...timestamps,
  },
});

export const ControlpathId = defineEntity({
  name: 'ControlpathId',
  tableName: 'controlpath_ids',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    device: () => p.manyToOne(Device).fieldName('device_id').deleteRule('restrict').index(),
    cpidType: p.enum(['PCI'] as const),
    cpidInfo: p.string().length(255),
    ...timestamps,
  },
});

export const Deployable = defineEntity({
  name: 'Deployable',
  tableName: 'deployables',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    parent: () => p.manyToOne(Deployable).fieldName('parent_id').nullable().index(),
    root: () => p.manyToOne(Deployable).fieldName('root_id').nullable().index(),
    name: p.string(),
    numAccelerators: p.integer(),
    device: () => p.manyToOne(Device).fieldName('device_id').deleteRule('cascade').index(),
    rpUuid: p.string().length(36).nullable(),
    driverName: p.string().nullable(),
    bitstreamId: p.string().length(36).nullable(),
    position: p.integer().default(0),
    attributes: () => p.oneToMany(Attribute).mappedBy('deployable'),
    attachHandles: () => p.oneToMany(AttachHandle).mappedBy('deployable'),
    ...timestamps,
  },
});

export const Attribute = defineEntity({
  name: 'Attribute',
  tableName: 'attributes',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    deployable: () => p.manyToOne(Deployable).fieldName('deployable_id').deleteRule('cascade').index(),
    key: p.text(),
    value: p.text(),
    position: p.integer().default(0),
    ...timestamps,
  },
});

export const AttachHandle = defineEntity({
  name: 'AttachHandle',
  tableName: 'attach_handles',
  properties: {
    id: p.integer().primary().autoincrement(),
    uuid: p.string().length(36).unique(),
    deployable: () => p.manyToOne(Deployable).fieldName('deployable_id').deleteRule('cascade').index(),
    cpid: () => p.manyToOne(ControlpathId).fieldName('cpid_id').deleteRule('cascade').index(),
    inUse: p.boolean().default(false),
    attachType: p.enum(['PCI', 'MDEV', 'TEST_PCI'] as const),
    attachInfo: p.string().length(255),
    position: p.integer().default(0),
    ...timestamps,
  },
});

export type IDevice = InferEntity<typeof Device>;
export type IDeployable = InferEntity<typeof Deployable>;
export type IAttachHandle = InferEntity<typeof AttachHandle>;
export type IAttribute = InferEntity<typeof Attribute>;
export type IControlpathId = InferEntity<typeof ControlpathId>;
