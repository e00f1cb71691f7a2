import { sql } from 'kysely';
import type { Db } from './connect.js';

// The worker's queues (outbox, deliveries) are written and claimed from all day, and their claims
// and turn queries read a partial index of the pending rows. Planned without statistics (a server
// with autovacuum off never analyzes them), those reads are bitmap scans: a bitmap scan never
// marks the dead entries it visits, so every call visits every row version the queue ever had
// since its last vacuum, slower with each minute of load. With statistics they are index scans,
// which mark them and skip them afterwards. Where autovacuum runs this does nothing.

/** The tables whose reads go wrong without statistics. */
const QUEUE_TABLES = ['outbox', 'deliveries'];

/**
 * Analyzes each queue table that autovacuum would analyze now (more rows changed since its last
 * analysis than the server's autovacuum_analyze_threshold plus autovacuum_analyze_scale_factor
 * of its rows), when autovacuum is off. Returns the tables it analyzed.
 */
export async function analyzeWhereAutovacuumWouldNot(db: Db): Promise<string[]> {
  const { rows } = await sql<{ table: string }>`
    SELECT s.relname AS table FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND s.relname = ANY(${QUEUE_TABLES}::text[]) AND current_setting('autovacuum') = 'off'
      AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
        + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
    ORDER BY s.relname`.execute(db);
  // SKIP_LOCKED: another worker analyzing the same table at the same moment is enough.
  for (const { table } of rows) await sql`ANALYZE (SKIP_LOCKED) ${sql.table(table)}`.execute(db);
  return rows.map((row) => row.table);
}
