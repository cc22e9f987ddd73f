import { Migration } from '@mikro-orm/migrations';

/**
 * Contract of 0.2.0 (needs every role at 0.2.0: `cyborg db contract` refuses while an older one
 * is alive). 0.2.0 keeps its migration history in `cyborg_migrations` (copied from 0.1.0's
 * `mikro_orm_migrations` by its `db migrate`); dropping 0.1.0's table is what makes a 0.1.0 role
 * refuse to start here in one line ("not at this code's schema"), instead of running on a schema
 * it no longer matches. No down: a downgrade after contract is restoring the backup taken before.
 */
export class Migration20261202010100_contract_old_history extends Migration {
  override name = 'Migration20261202010100_contract_old_history';

  override up(): void | Promise<void> {
    this.addSql(`drop table if exists "mikro_orm_migrations";`);
    this.addSql(`update "cyborg_schema_release" set "contracted_at" = now() where "release" = '0.2.0';`);
  }
}
