import { sql } from 'kysely';
import type { Db, Executor } from './connect.js';

// On a Citus coordinator (the `citus` extension is present), after the migrations: the tables
// that are read before a workspace is known (a key by its prefix, the workspace itself, the key's
// user, a console session or sign-in link by its token's hash) become reference tables, copied to every node; every other table with a workspace_id is
// distributed by it, all co-located, so that one workspace's statements run on one node. On plain
// PostgreSQL this does nothing. It runs on every migration and does only what is left, so a table
// a later migration adds is distributed the next time.
//
// The order is Citus's: with the foreign keys in place, distributing a table that references
// `workspaces` fails until `workspaces` is a reference table, and once it is, the tables
// referencing it turn into Citus-local tables that refuse to be distributed (identity columns).
// So the foreign keys of every table still to move are dropped, the tables moved, and the keys
// added back exactly as they were. In one transaction: a failure leaves the schema as it was.

export const REFERENCE_TABLES = ['workspaces', 'users', 'api_keys', 'console_sessions', 'console_sign_in_links'] as const;
/** The table the others are co-located with. */
export const ANCHOR = 'leads';

interface ForeignKey {
  table: string;
  name: string;
  definition: string;
}

export async function citusIsPresent(db: Executor): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS present`.execute(db);
  return rows[0]!.present;
}

const presenceOfPool = new WeakMap<Db, Promise<boolean>>();
/**
 * Whether the pool's database is a Citus coordinator, asked once per pool and remembered; false
 * while it cannot be asked, and asked again next time (a database that does not answer fails the
 * statements that need to know anyway).
 */
export async function isCitusCoordinator(db: Db): Promise<boolean> {
  let known = presenceOfPool.get(db);
  if (!known) presenceOfPool.set(db, (known = citusIsPresent(db)));
  return known.catch(() => {
    if (presenceOfPool.get(db) === known) presenceOfPool.delete(db);
    return false;
  });
}

/** Returns the tables it moved (none on plain PostgreSQL or once everything is in place). */
export async function distributeTables(db: Db): Promise<string[]> {
  if (!(await citusIsPresent(db))) return [];
  return db.transaction().execute(async (trx) => {
    const placed = new Set((await sql<{ table: string }>`SELECT logicalrelid::regclass::text AS table FROM pg_dist_partition`.execute(trx)).rows.map((row) => row.table));
    const tenantTables = (
      await sql<{ table: string }>`
      SELECT c.relname AS table FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attname = 'workspace_id' AND NOT a.attisdropped
      ORDER BY c.relname
    `.execute(trx)
    ).rows
      .map((row) => row.table)
      .filter((table) => !(REFERENCE_TABLES as readonly string[]).includes(table));
    const references = REFERENCE_TABLES.filter((table) => !placed.has(table));
    const distributed = [ANCHOR, ...tenantTables.filter((table) => table !== ANCHOR)].filter((table) => !placed.has(table));
    const moving = [...references, ...distributed];
    if (moving.length === 0) return [];

    // Reference and distributed tables are created in one transaction only one shard at a time.
    await sql`SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`.execute(trx);
    const keys = (
      await sql<ForeignKey>`
      SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
      FROM pg_constraint
      WHERE contype = 'f' AND (conrelid::regclass::text = ANY(${moving}::text[]) OR confrelid::regclass::text = ANY(${moving}::text[]))
    `.execute(trx)
    ).rows;
    for (const key of keys) await sql`ALTER TABLE ${sql.table(key.table)} DROP CONSTRAINT ${sql.id(key.name)}`.execute(trx);
    // Citus refuses tables with triggers; the statements that change keys notify instead (src/api-keys/repository.ts).
    await sql`DROP TRIGGER IF EXISTS api_keys_changed ON api_keys`.execute(trx);
    // But for audit_log's append-only trigger (migration 0019), which only raises on the row's
    // own shard and reads nothing else: Citus copies it to every shard when allowed to.
    await sql`SET LOCAL citus.enable_unsafe_triggers TO on`.execute(trx);
    for (const table of references) await sql`SELECT create_reference_table(${table})`.execute(trx);
    for (const table of distributed) {
      const colocate = placed.has(ANCHOR) || table !== ANCHOR ? ANCHOR : 'none';
      await sql`SELECT create_distributed_table(${table}, 'workspace_id', colocate_with => ${colocate})`.execute(trx);
    }
    for (const key of keys) await sql`ALTER TABLE ${sql.table(key.table)} ADD CONSTRAINT ${sql.id(key.name)} ${sql.raw(key.definition)}`.execute(trx);
    return moving;
  });
}
