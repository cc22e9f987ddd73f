import { AdoptError, AdoptExit } from './errors.js';
import { revisionOf, type Revision } from './revisions.js';
import type { Row, Source } from './source.js';

/** The tables of Cyborg's schema we read, and the columns each must have at 9.0.0. */
const TABLES = {
  devices: ['id', 'uuid', 'type', 'vendor', 'model', 'std_board_info', 'vendor_board_info', 'hostname', 'created_at'],
  controlpath_ids: ['id', 'uuid', 'device_id', 'cpid_type', 'cpid_info'],
  deployables: ['id', 'uuid', 'name', 'num_accelerators', 'device_id', 'rp_uuid', 'driver_name', 'bitstream_id'],
  attributes: ['id', 'uuid', 'deployable_id', 'key', 'value'],
  attach_handles: ['id', 'uuid', 'deployable_id', 'cpid_id', 'in_use', 'attach_type', 'attach_info'],
  device_profiles: ['id', 'uuid', 'name', 'profile_json', 'description', 'created_at', 'updated_at'],
  extended_accelerator_requests: [
    'id',
    'uuid',
    'project_id',
    'state',
    'device_profile_id',
    'device_profile_group_id',
    'hostname',
    'device_rp_uuid',
    'instance_uuid',
    'attach_handle_id',
    'deployable_id',
    'created_at',
  ],
} as const;

export type CyborgTable = keyof typeof TABLES;

/** A Cyborg database as read: its revision and every row of the tables we adopt, by table, in id order. */
export interface CyborgData {
  revision: Revision;
  rows: Record<CyborgTable, Row[]>;
}

/**
 * Reads a Cyborg database: `alembic_version` first (no such table, or none of Cyborg's tables: not
 * Cyborg's), its revision checked against the known ones, then each table whole, in id order.
 */
export async function readCyborg(source: Source): Promise<CyborgData> {
  const tables = await source.tables();
  const missing = Object.keys(TABLES).filter((t) => !tables.has(t));
  if (!tables.has('alembic_version') || missing.length === Object.keys(TABLES).length)
    throw new AdoptError(`--from ${source.name}: not an OpenStack Cyborg database (no alembic_version table with Cyborg's tables)`, AdoptExit.notAdoptable);
  const versions = await source.select('SELECT version_num FROM alembic_version');
  if (versions.length !== 1)
    throw new AdoptError(`--from ${source.name}: alembic_version holds ${versions.length} rows, not one: not a Cyborg database`, AdoptExit.notAdoptable);
  const rev = revisionOf(String(versions[0]!.version_num));
  if (!rev.ok) throw new AdoptError(`--from ${source.name}: ${rev.why}`, AdoptExit.notAdoptable);
  if (missing.length > 0)
    throw new AdoptError(`--from ${source.name}: not an OpenStack Cyborg database: no table ${missing.join(', ')}`, AdoptExit.notAdoptable);
  const rows = {} as Record<CyborgTable, Row[]>;
  for (const [table, cols] of Object.entries(TABLES) as [CyborgTable, readonly string[]][]) {
    const have = await source.columns(table);
    const absent = cols.filter((c) => !have.has(c));
    if (absent.length > 0)
      throw new AdoptError(
        `--from ${source.name}: table ${table} has no column ${absent.join(', ')}: not Cyborg's schema at ${rev.value.revision}`,
        AdoptExit.notAdoptable,
      );
    const wanted = table === 'devices' && have.has('status') ? [...cols, 'status'] : cols;
    const q = source.dialect === 'mysql' ? (c: string) => `\`${c}\`` : (c: string) => `"${c}"`;
    rows[table] = await source.select(`SELECT ${wanted.map(q).join(', ')} FROM ${q(table)} ORDER BY ${q('id')}`);
  }
  return { revision: rev.value, rows };
}
