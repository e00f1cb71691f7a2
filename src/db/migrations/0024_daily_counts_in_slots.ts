import { sql, type Kysely } from 'kysely';

// A workspace's counts of a day were one row, which every write group of the workspace updated
// and held locked until its commit: concurrent groups of one workspace queued on it, one commit
// after another. The day is now split into slots, each transaction adding to the slot of its
// database session (src/leads/daily-counts-repository.ts), so groups on different connections
// never wait on each other here; the overview adds the slots up.
//
// Touches only lead_daily_counts.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE lead_daily_counts ADD COLUMN slot smallint NOT NULL DEFAULT 0;
    ALTER TABLE lead_daily_counts DROP CONSTRAINT lead_daily_counts_pkey;
    ALTER TABLE lead_daily_counts ADD PRIMARY KEY (workspace_id, day, slot);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TEMPORARY TABLE merged_daily_counts ON COMMIT DROP AS
      SELECT workspace_id, day, sum(created)::int AS created, sum(updated)::int AS updated, sum(skipped)::int AS skipped, sum(failed)::int AS failed
      FROM lead_daily_counts GROUP BY workspace_id, day;
    DELETE FROM lead_daily_counts;
    ALTER TABLE lead_daily_counts DROP CONSTRAINT lead_daily_counts_pkey;
    ALTER TABLE lead_daily_counts DROP COLUMN slot;
    ALTER TABLE lead_daily_counts ADD PRIMARY KEY (workspace_id, day);
    INSERT INTO lead_daily_counts (workspace_id, day, created, updated, skipped, failed) SELECT * FROM merged_daily_counts;
  `.execute(db);
}
