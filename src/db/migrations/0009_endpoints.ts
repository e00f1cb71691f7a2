import { sql, type Kysely } from 'kysely';

// What the worker keeps about each webhook endpoint beyond its configuration: a connector
// ('connector', its id) or a workflow's Custom URL block ('workflow', its id). A row appears
// when the endpoint first fails, is answered 429, or gets a cap; an endpoint without one is
// healthy and uncapped. No foreign key, as for the connector id in a workflow block: the
// key names one of two tables, and connectors are only ever soft-deleted.
//
// - health: `failing_since` and `consecutive_failures` describe the current run of failed
//   attempts (reset by any 2xx); the worker sets `disabled_at` and `disabled_reason` once
//   that run is long enough, and `connector enable` / `workflow enable` clear all four.
// - throughput: `max_per_second` is the cap (NULL: none); `next_slot_at` is the earliest the
//   endpoint's next delivery may go (slots handed out by claims, or the end of a 429 pause);
//   `queued_until` is where the next delivery that found no free slot is scheduled, so that
//   a burst is spread over time in order instead of all of it coming due again at once.
//
// `deliveries.rate_limited`: how many attempts of the current series the receiver answered 429.
//
// Touches only this table and that column: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE endpoints (
      kind text NOT NULL CHECK (kind IN ('connector', 'workflow')),
      endpoint_id bigint NOT NULL,
      max_per_second double precision CHECK (max_per_second > 0),
      next_slot_at timestamptz NOT NULL DEFAULT now(),
      queued_until timestamptz NOT NULL DEFAULT now(),
      failing_since timestamptz,
      consecutive_failures integer NOT NULL DEFAULT 0,
      disabled_at timestamptz,
      disabled_reason text,
      PRIMARY KEY (kind, endpoint_id)
    );
    ALTER TABLE deliveries ADD COLUMN rate_limited integer NOT NULL DEFAULT 0;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries DROP COLUMN rate_limited;
    DROP TABLE endpoints;
  `.execute(db);
}
