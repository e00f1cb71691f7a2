import { sql, type Insertable } from 'kysely';
import type { AuditLogTable } from '../db/audit-schema.js';
import type { Db, Executor } from '../db/connect.js';

// The audit log's statements. Entries are only ever inserted (a trigger refuses UPDATE and
// DELETE) and purged past their retention, in a transaction marked as the purge.

export async function insertAuditEntry(db: Executor, row: Insertable<AuditLogTable>): Promise<void> {
  await db.insertInto('audit_log').values(row).execute();
}

/** A workspace's entries, newest first: `limit` of them, older than `before` when given (keyset pages by id). */
export function listAuditEntries(db: Executor, workspaceId: number, page: { limit: number; before?: number }) {
  return db
    .selectFrom('audit_log')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .$if(page.before !== undefined, (query) => query.where('id', '<', page.before!))
    .orderBy('id', 'desc')
    .limit(page.limit)
    .execute();
}

/**
 * Housekeeping: deletes entries older than `retentionDays`. The only DELETE the append-only
 * trigger lets through, because this transaction says it is the purge (`audit_log.purge`,
 * migration 0019); on Citus the pools pass SET LOCAL on to the workers that hold the shards
 * (`citus.propagate_set_commands`, src/db/connect.ts).
 */
export function purgeOldAuditEntries(db: Db, retentionDays: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`SET LOCAL audit_log.purge TO 'on'`.execute(trx);
    const result = await trx
      .deleteFrom('audit_log')
      .where('at', '<', sql<string>`now() - make_interval(days => ${retentionDays})`)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}
