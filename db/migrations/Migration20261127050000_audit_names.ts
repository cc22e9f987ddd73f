import { Migration } from '@mikro-orm/migrations';

/**
 * Names beside the ids in the transition log: the caller's user and project names as Keystone's
 * token answer gave them, so that people reading the audit know who `3f2a…` is and `?user=admin`
 * finds the admin's rows. Null on the rows already written (the log is never rewritten) and for
 * what no Keystone user did (agents, the conductor, noauth).
 */
export class Migration20261127050000_audit_names extends Migration {
  override name = 'Migration20261127050000_audit_names';

  override up(): void | Promise<void> {
    this.addSql(`alter table "transition_log" add column "actor_name" varchar(255) null, add column "project_name" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "transition_log" drop column "project_name", drop column "actor_name";`);
  }
}
