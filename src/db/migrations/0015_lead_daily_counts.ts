import { sql, type Kysely } from 'kysely';

// What the intake did per workspace and UTC day, for the console's overview: leads created,
// updated and skipped, and rows that failed (src/leads/daily-counts-repository.ts says which).
// Skipped and failed rows change no lead, so the leads table cannot tell them afterwards.
// Written in the same transaction as the writes they count; housekeeping drops rows past 90 days.
//
// Touches only its own table.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE lead_daily_counts (
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      day date NOT NULL,
      created integer NOT NULL DEFAULT 0,
      updated integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      PRIMARY KEY (workspace_id, day)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE lead_daily_counts`.execute(db);
}
