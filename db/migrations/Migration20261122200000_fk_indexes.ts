import { Migration } from '@mikro-orm/migrations';

/**
 * An index on every foreign-key column that lacked one. PostgreSQL indexes the referenced side
 * only: loading one host's inventory (a takeover, a rebuild) filtered deployables, attributes and
 * attach handles by a scan of the whole table, and deleting a device or deployable checked its
 * referencing rows the same way — costs that grow with the fleet, not with the host.
 */
export class Migration20261122200000_fk_indexes extends Migration {
  override name = 'Migration20261122200000_fk_indexes';

  override up(): void | Promise<void> {
    for (const [table, column] of FK_COLUMNS) this.addSql(`create index "${table}_${column}_index" on "${table}" ("${column}");`);
  }

  override down(): void | Promise<void> {
    for (const [table, column] of FK_COLUMNS) this.addSql(`drop index "${table}_${column}_index";`);
  }
}

const FK_COLUMNS = [
  ['controlpath_ids', 'device_id'],
  ['deployables', 'device_id'],
  ['deployables', 'parent_id'],
  ['deployables', 'root_id'],
  ['attributes', 'deployable_id'],
  ['attach_handles', 'deployable_id'],
  ['attach_handles', 'cpid_id'],
] as const;
