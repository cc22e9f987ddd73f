import { Migration } from '@mikro-orm/migrations';

/**
 * The flush stamp: the last transition row of each flush carries its flush's id, unique, so a
 * flush whose COMMIT answer was lost can be found committed and is not written twice. Partial
 * index: one row per flush is stamped, not one per transition.
 */
export class Migration20261122170000_flush_stamp extends Migration {
  override name = 'Migration20261122170000_flush_stamp';

  override up(): void | Promise<void> {
    this.addSql(`alter table "transition_log" add column "flush" varchar(64) null;`);
    this.addSql(`create unique index "transition_log_flush_unique" on "transition_log" ("flush") where "flush" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "transition_log_flush_unique";`);
    this.addSql(`alter table "transition_log" drop column "flush";`);
  }
}
