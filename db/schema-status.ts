import type { MikroORM } from '@mikro-orm/postgresql';
import { MIGRATIONS, pendingOf, type SchemaState } from './releases.js';

export interface SchemaStatus {
  /** Migrations of this code's release and those before it the database has not run (expand and contract). */
  pending: string[];
}

/** 0.1.0 kept its history here; 0.2.0 keeps it in `cyborg_migrations` (db/config.ts) and drops this table on contract. */
export const OLD_HISTORY = 'mikro_orm_migrations';
export const HISTORY = 'cyborg_migrations';

/**
 * What the database ran, read without changing it (the migrator's own reads create its
 * bookkeeping table first): the migrations in either history table, and the releases whose
 * phases ran.
 */
export async function schemaState(orm: MikroORM): Promise<SchemaState> {
  const conn = orm.em.getConnection();
  const [row] = await conn.execute<{ old: string | null; cur: string | null; rel: string | null }[]>(
    `select to_regclass('${OLD_HISTORY}')::text as old, to_regclass('${HISTORY}')::text as cur, to_regclass('cyborg_schema_release')::text as rel`,
  );
  const applied = new Set<string>();
  for (const t of [row?.old ? OLD_HISTORY : null, row?.cur ? HISTORY : null]) {
    if (!t) continue;
    for (const r of await conn.execute<{ name: string }[]>(`select name from "${t}"`)) applied.add(r.name.replace(/\.(js|ts)$/, ''));
  }
  const releases = row?.rel
    ? (
        await conn.execute<{ release: string; contracted: boolean }[]>(`select release, contracted_at is not null as contracted from cyborg_schema_release`)
      ).map((r) => ({ release: r.release, expanded: true, contracted: r.contracted }))
    : [];
  return { applied, releases };
}

/** Whether the database is at this code's schema (every migration of its release, contract too), without changing it. */
export async function schemaStatus(orm: MikroORM): Promise<SchemaStatus> {
  const state = await schemaState(orm);
  const older = MIGRATIONS.slice(0, -1)
    .flatMap((r) => [...r.expand, ...r.contract])
    .filter((m) => !state.applied.has(m));
  const mine = pendingOf(state);
  return { pending: [...older, ...mine.expand, ...mine.contract] };
}
