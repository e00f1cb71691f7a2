import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from './connect.js';
import type { Database } from './schema.js';

// Rows whose values must name their row before it exists, as sealed secrets do
// (src/secrets/keyring.ts): the id is taken from the identity first, then the row is inserted
// under it. On Citus the coordinator hands the id out as for any insert (as for leads).

type IdentityTable = 'connectors' | 'workflows';

export async function nextIdentity(db: Executor, table: IdentityTable): Promise<number> {
  const { rows } = await sql<{ id: number }>`SELECT nextval(pg_get_serial_sequence(${table}, 'id')) AS id`.execute(db);
  return rows[0]!.id;
}

/** Inserts a row under an id from nextIdentity (Kysely has no `OVERRIDING SYSTEM VALUE`, which a GENERATED ALWAYS id needs). */
export async function insertWithIdentity<T extends IdentityTable>(db: Executor, table: T, values: Insertable<Database[T]> & { id: number }): Promise<Selectable<Database[T]>> {
  const entries = Object.entries(values).filter(([, value]) => value !== undefined);
  const { rows } = await sql<Selectable<Database[T]>>`
    INSERT INTO ${sql.table(table)} (${sql.join(entries.map(([column]) => sql.ref(column)))})
    OVERRIDING SYSTEM VALUE VALUES (${sql.join(entries.map(([, value]) => sql.val(value)))}) RETURNING *
  `.execute(db);
  return rows[0]!;
}
