import { Migration } from '@mikro-orm/migrations';

/**
 * The audit columns of the transition log: the caller's project (the user is `actor`) and the
 * action's arguments that matter (a program's image, a driver's version). Two indexes serve the
 * audit query's keyset pages, newest first: (host, at, seq) for one host over a time range, and
 * (at, seq) for the whole fleet over a time range — and for retention, which deletes the oldest.
 * Added columns are null on the rows already written: the log is never rewritten.
 */
export class Migration20261123220000_audit extends Migration {
  override name = 'Migration20261123220000_audit';

  override up(): void | Promise<void> {
    this.addSql(`alter table "transition_log" add column "project_id" varchar(255) null, add column "args" jsonb null;`);
    this.addSql(`create index "transition_log_host_at_seq_index" on "transition_log" ("host", "at", "seq");`);
    this.addSql(`create index "transition_log_at_seq_index" on "transition_log" ("at", "seq");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "transition_log_at_seq_index";`);
    this.addSql(`drop index "transition_log_host_at_seq_index";`);
    this.addSql(`alter table "transition_log" drop column "args", drop column "project_id";`);
  }
}
