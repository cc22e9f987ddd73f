import { Migration } from '@mikro-orm/migrations';

/**
 * Expand of 0.2.0 (additive: 0.1.0's roles run beside it). Which release's phases ran on this
 * database: a role reads it at start to refuse a schema more than its own release's expand ahead,
 * and a contracted one it cannot run on (db/releases.ts). 0.1.0 had no contract: it is recorded
 * whole.
 */
export class Migration20261202010000_schema_releases extends Migration {
  override name = 'Migration20261202010000_schema_releases';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "cyborg_schema_release" ("release" varchar(32) not null, "expanded_at" timestamptz not null default now(), "contracted_at" timestamptz null, constraint "cyborg_schema_release_pkey" primary key ("release"));`,
    );
    this.addSql(`insert into "cyborg_schema_release" ("release", "contracted_at") values ('0.1.0', now()), ('0.2.0', null);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "cyborg_schema_release";`);
  }
}
