import { readdirSync } from 'node:fs';
import type { MikroORM } from '@mikro-orm/postgresql';

export interface SchemaStatus {
  /** Migrations of this code the database has not run; empty when it is at the code's schema. */
  pending: string[];
}

/** The migrations this code ships (db/migrations, .ts in a checkout, .js in a build). */
function shipped(): string[] {
  const files = readdirSync(new URL('./migrations', import.meta.url));
  return files
    .filter((f) => /\.(js|ts)$/.test(f) && !/\.d\.ts$/.test(f))
    .map((f) => f.replace(/\.(js|ts)$/, ''))
    .sort();
}

/**
 * Whether the database is at this code's schema, without changing it. The migrator's own
 * `getPending` creates its bookkeeping table first; a database that has none has run nothing, so
 * every shipped migration is pending and the check writes nothing.
 */
export async function schemaStatus(orm: MikroORM): Promise<SchemaStatus> {
  const [row] = await orm.em.getConnection().execute<{ t: string | null }[]>(`select to_regclass('mikro_orm_migrations')::text as t`);
  if (!row?.t) return { pending: shipped() };
  return { pending: (await orm.migrator.getPending()).map((m) => m.name.replace(/\.(js|ts)$/, '')) };
}
