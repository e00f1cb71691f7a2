import { sql, type Kysely } from 'kysely';

// Tracing across the outbox (docs/operations.md, "Tracing"): the W3C trace context of the
// request that wrote an event (`outbox.trace_context`, JSON of `traceparent` and `tracestate`),
// carried to the deliveries fanned out from it (`deliveries.trace_context`), and the trace id
// of each attempt (`delivery_attempts.trace_id`). Null when the writer did not trace. Nullable
// columns without a default: no table is rewritten, and Citus adds them to every shard.
//
// Touches only these columns: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE outbox ADD COLUMN trace_context text;
    ALTER TABLE deliveries ADD COLUMN trace_context text;
    ALTER TABLE delivery_attempts ADD COLUMN trace_id text;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE delivery_attempts DROP COLUMN trace_id;
    ALTER TABLE deliveries DROP COLUMN trace_context;
    ALTER TABLE outbox DROP COLUMN trace_context;
  `.execute(db);
}
