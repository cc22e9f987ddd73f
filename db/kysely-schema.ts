import type { ColumnType, Generated } from 'kysely';

/**
 * The database's tables as Kysely sees them, declared once from the migrations (db/migrations/):
 * every query builder and raw `sql` executor of db/ is a `Kysely<DB>`. A column added by a
 * migration is added here in the same commit.
 *
 * Why not inferred from the entities (MikroORM's `getKysely()` default): the hot path, the log and
 * the release table have no entity (they are written as plain SQL, see hot-path.ts), and the
 * inferred type changes with the entity list a role registers.
 */
type Stamp = ColumnType<Date, Date | string, Date | string>;
/** jsonb: written as a JSON text or value, read back parsed by node-postgres. */
type Json = unknown;
type Serial = Generated<number>;

interface Timestamps {
  created_at: Stamp;
  updated_at: Stamp;
}

export interface AcceleratorsTable extends Timestamps {
  id: string;
  host: string;
  state: string;
  context: Json;
}

export interface DevicesTable extends Timestamps {
  id: Serial;
  uuid: string;
  type: 'GPU' | 'FPGA' | 'AICHIP' | 'QAT' | 'NIC' | 'SSD';
  vendor: string;
  model: string;
  std_board_info: string;
  vendor_board_info: string;
  hostname: string;
  status: ColumnType<'enabled' | 'maintaining', 'enabled' | 'maintaining' | undefined>;
  driver: string;
  stub: ColumnType<boolean, boolean | undefined>;
  position: ColumnType<number, number | undefined>;
}

export interface DeployablesTable extends Timestamps {
  id: Serial;
  uuid: string;
  parent_id: number | null;
  root_id: number | null;
  name: string;
  num_accelerators: number;
  device_id: number;
  rp_uuid: string | null;
  driver_name: string | null;
  bitstream_id: string | null;
  position: ColumnType<number, number | undefined>;
}

export interface AttributesTable extends Timestamps {
  id: Serial;
  uuid: string;
  deployable_id: number;
  key: string;
  value: string;
  position: ColumnType<number, number | undefined>;
}

export interface ControlpathIdsTable extends Timestamps {
  id: Serial;
  uuid: string;
  device_id: number;
  cpid_type: 'PCI';
  cpid_info: string;
}

export interface AttachHandlesTable extends Timestamps {
  id: Serial;
  uuid: string;
  deployable_id: number;
  cpid_id: number;
  in_use: ColumnType<boolean, boolean | undefined>;
  attach_type: 'PCI' | 'MDEV' | 'TEST_PCI';
  attach_info: string;
  position: ColumnType<number, number | undefined>;
}

export interface DeviceProfilesTable extends Timestamps {
  id: Serial;
  uuid: string;
  name: string;
  profile_json: string;
  description: string | null;
}

export interface DocumentsTable extends Timestamps {
  collection: string;
  id: string;
  body: Json;
}

export interface ExtendedAcceleratorRequestsTable extends Timestamps {
  id: Serial;
  uuid: string;
  project_id: string | null;
  state: string;
  machine_state: string;
  context: Json;
  device_profile_id: number | null;
  device_profile_name: string;
  device_profile_group_id: number;
  hostname: string | null;
  device_rp_uuid: string | null;
  instance_uuid: string | null;
  attach_handle_id: number | null;
  substate: ColumnType<string, string | undefined>;
  deployable_id: number | null;
}

export interface HostsTable extends Timestamps {
  name: string;
  state: string;
  context: Json;
  agent_id: string | null;
}

export interface DriversTable extends Timestamps {
  id: Serial;
  host: string;
  name: string;
  version: string;
  state: ColumnType<string, string | undefined>;
}

export interface TransitionLogTable {
  /** bigserial: node-postgres returns int8 as a string. */
  seq: ColumnType<string, never, never>;
  kind: string;
  id: string;
  host: string | null;
  event: string;
  from: string;
  to: string;
  actor: string | null;
  request_id: string | null;
  reason: string | null;
  at: Stamp;
  flush: string | null;
  project_id: string | null;
  args: Json;
  actor_name: string | null;
  project_name: string | null;
}

export interface SchemaReleaseTable {
  release: string;
  expanded_at: ColumnType<Date, Date | string | undefined, Date | string>;
  contracted_at: Date | string | null;
}

export interface DB {
  accelerators: AcceleratorsTable;
  devices: DevicesTable;
  deployables: DeployablesTable;
  attributes: AttributesTable;
  controlpath_ids: ControlpathIdsTable;
  attach_handles: AttachHandlesTable;
  device_profiles: DeviceProfilesTable;
  documents: DocumentsTable;
  extended_accelerator_requests: ExtendedAcceleratorRequestsTable;
  hosts: HostsTable;
  drivers: DriversTable;
  transition_log: TransitionLogTable;
  cyborg_schema_release: SchemaReleaseTable;
}
