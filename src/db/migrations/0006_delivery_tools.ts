import { sql, type Kysely } from 'kysely';

// Operator tools for deliveries and workflows (admin CLI).
//
// Replay: `deliveries replay` sends a finished delivery again under the same `webhook-id`
// as a new series of attempts. `series` numbers them (1 for the original sending); the
// delivery row carries the series in progress and each attempt the series it belongs to,
// so attempt numbers restart at 1 in every series and all of them are kept.
//
// Pausing: `workflow deactivate` / `activate`. `active_since` is when a workflow was last
// activated (NULL: active since it was created); events that occurred before it are not
// fanned out to it, so events from a pause are never delivered after the workflow is
// activated again, even when the worker reaches them late.
//
// Touches only these columns and the attempts' key: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE deliveries ADD COLUMN series integer NOT NULL DEFAULT 1;
    ALTER TABLE delivery_attempts ADD COLUMN series integer NOT NULL DEFAULT 1;
    ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey;
    ALTER TABLE delivery_attempts ADD PRIMARY KEY (delivery_id, series, attempt);

    ALTER TABLE workflows ADD COLUMN active_since timestamptz;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE workflows DROP COLUMN active_since;

    DELETE FROM delivery_attempts WHERE series > 1;
    ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey;
    ALTER TABLE delivery_attempts ADD PRIMARY KEY (delivery_id, attempt);
    ALTER TABLE delivery_attempts DROP COLUMN series;
    ALTER TABLE deliveries DROP COLUMN series;
  `.execute(db);
}
