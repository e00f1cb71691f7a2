import { sql, type Kysely } from 'kysely';

// Erasure of a person (src/erasure/): the keyed digests of the contact details of people who
// asked not to be stored again, and the erasure notice as a delivery of its own.
//
// suppressed_contacts holds an HMAC of each contact detail (src/secrets/contact-digest.ts),
// never the detail itself. The deliveries' checks gain the event `lead_erased` and its sender
// `erasure_notice`: the only change to a table this migration does not create.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE suppressed_contacts (
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      digest bytea NOT NULL,
      kind text NOT NULL CHECK (kind IN ('email', 'linkedin', 'phone')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (workspace_id, digest)
    );
    ALTER TABLE deliveries
      DROP CONSTRAINT IF EXISTS deliveries_event_check,
      ADD CONSTRAINT deliveries_event_check CHECK (event IN ('lead', 'workflow', 'test', 'lead_erased')),
      DROP CONSTRAINT IF EXISTS deliveries_sender_check,
      ADD CONSTRAINT deliveries_sender_check CHECK (sender IN ('connector_push', 'saved_connector', 'custom_url', 'test', 'erasure_notice'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DELETE FROM deliveries WHERE event = 'lead_erased';
    ALTER TABLE deliveries
      DROP CONSTRAINT deliveries_event_check,
      ADD CONSTRAINT deliveries_event_check CHECK (event IN ('lead', 'workflow', 'test')),
      DROP CONSTRAINT deliveries_sender_check,
      ADD CONSTRAINT deliveries_sender_check CHECK (sender IN ('connector_push', 'saved_connector', 'custom_url', 'test'));
    DROP TABLE suppressed_contacts;
  `.execute(db);
}
