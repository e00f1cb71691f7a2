import { sql, type Kysely } from 'kysely';

// A claim takes one workspace's due deliveries in due order (src/deliveries/claim-repository.ts).
// The due index was led by the due time alone, so a table without statistics (autovacuum off,
// or a table not yet analyzed) was claimed from by a bitmap of every due entry ANDed with every
// entry of the workspace, dead ones included, and a bitmap scan never marks the dead entries it
// visits. Led by the workspace, the claim walks the index in its own order and stops at its
// limit, whatever the statistics, and PostgreSQL marks the dead entries it passes so the next
// claim skips them. The due-time reads across workspaces (the turns, the metrics) still read
// only this partial index's pending entries.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX IF EXISTS deliveries_due_idx;
    CREATE INDEX deliveries_due_idx ON deliveries (workspace_id, next_attempt_at, id) WHERE branch = 'pending';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX IF EXISTS deliveries_due_idx;
    CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at, id) WHERE branch = 'pending';
  `.execute(db);
}
