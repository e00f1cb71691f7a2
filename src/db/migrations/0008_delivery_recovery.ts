import { sql, type Kysely } from 'kysely';

// Recovery after an outage (admin CLI `deliveries recover`): `recovered_at` marks a delivery
// that ended `Failed` and was sent again by a recovery, so a second recovery skips it. The
// partial indexes find an endpoint's failed deliveries by when they ended.
//
// Touches only these columns and indexes: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries ADD COLUMN recovered_at timestamptz;
    CREATE INDEX deliveries_failed_connector_idx ON deliveries (connector_id, finished_at) WHERE branch = 'Failed' AND connector_id IS NOT NULL;
    CREATE INDEX deliveries_failed_workflow_idx ON deliveries (workflow_id, finished_at) WHERE branch = 'Failed' AND workflow_id IS NOT NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX deliveries_failed_workflow_idx;
    DROP INDEX deliveries_failed_connector_idx;
    ALTER TABLE deliveries DROP COLUMN recovered_at;
  `.execute(db);
}
