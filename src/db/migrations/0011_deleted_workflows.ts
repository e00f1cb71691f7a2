import { sql, type Kysely } from 'kysely';

// `workflow delete`: a workflow is soft-deleted like a connector (`deleted_at`), so the
// deliveries it made keep naming it (their history, `deliveries show`) while nothing new is
// fanned out to it and nothing of it is sent again (deleteEndpoint, src/deliveries/service.ts).
//
// Touches only this column: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workflows ADD COLUMN deleted_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workflows DROP COLUMN deleted_at`.execute(db);
}
