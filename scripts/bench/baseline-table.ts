// The INSERT baseline's table and statements, shared by the baseline server and the
// PostgreSQL-only ceiling. Its rows name a workspace, as every tenant table's do: on a Citus
// coordinator the table is distributed by it beside `leads`, so the baseline is a routed INSERT
// (one shard, the fast path) like the service's own writes, and a ratio against it compares
// like with like on both kinds of database.
import type pg from 'pg';

export const BASELINE_INSERT = 'INSERT INTO bench_baseline (workspace_id, payload) VALUES ($1, $2) RETURNING id, created_at';
/** The read baseline: a lead by its primary key within its workspace, as the service reads it. */
export const BASELINE_READ = 'SELECT * FROM leads WHERE workspace_id = $1 AND id = $2';

/** Creates the table once (idempotent), distributed by workspace on a Citus coordinator. */
export async function prepareBaselineTable(pool: pg.Pool): Promise<void> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS bench_baseline (
       workspace_id bigint NOT NULL,
       id bigint GENERATED ALWAYS AS IDENTITY,
       payload jsonb NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (workspace_id, id)
     )`,
  );
  const { rows } = await pool.query<{ citus: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`);
  if (!rows[0]!.citus) return;
  const { rows: distributed } = await pool.query<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'bench_baseline'::regclass) AS present`,
  );
  if (!distributed[0]!.present) await pool.query(`SELECT create_distributed_table('bench_baseline', 'workspace_id', colocate_with => 'leads')`);
}
