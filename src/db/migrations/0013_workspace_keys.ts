import { sql, type Kysely } from 'kysely';

// Every tenant table carries `workspace_id`, and every key, unique constraint and foreign key
// among tenant tables includes it, so the same schema can be distributed by workspace on Citus
// (src/db/distribution.ts), whose rules are: a unique key includes the distribution column, and a
// foreign key between distributed tables joins on it. On plain PostgreSQL nothing else changes.
//
// - company_tags, lead_tags, idempotency_records, endpoints and delivery_attempts gain the column,
//   filled from the row they belong to (an endpoints row whose connector or workflow is gone
//   describes nothing and is dropped).
// - Keys keep their old columns first and gain workspace_id last: every index serves the lookups
//   it served before, and statements that name the workspace use it as well.
// - leads.company_id no longer becomes NULL when its company is deleted (Citus refuses SET NULL
//   on a key that includes the distribution column): companies are only ever deleted with their
//   workspace, which deletes the leads in the same statement.
// - workspaces, users and api_keys stay keyed by id: they become reference tables (a key is
//   looked up by prefix before its workspace is known).
//
// Touches only these tables' keys and the new columns: independent of other migrations.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE company_tags ADD COLUMN workspace_id bigint;
    UPDATE company_tags AS t SET workspace_id = c.workspace_id FROM companies AS c WHERE c.id = t.company_id;
    ALTER TABLE lead_tags ADD COLUMN workspace_id bigint;
    UPDATE lead_tags AS t SET workspace_id = l.workspace_id FROM leads AS l WHERE l.id = t.lead_id;
    ALTER TABLE idempotency_records ADD COLUMN workspace_id bigint;
    UPDATE idempotency_records AS r SET workspace_id = k.workspace_id FROM api_keys AS k WHERE k.id = r.api_key_id;
    ALTER TABLE delivery_attempts ADD COLUMN workspace_id bigint;
    UPDATE delivery_attempts AS a SET workspace_id = d.workspace_id FROM deliveries AS d WHERE d.id = a.delivery_id;
    ALTER TABLE endpoints ADD COLUMN workspace_id bigint;
    UPDATE endpoints AS e SET workspace_id = coalesce(
      (SELECT c.workspace_id FROM connectors AS c WHERE e.kind = 'connector' AND c.id = e.endpoint_id),
      (SELECT w.workspace_id FROM workflows AS w WHERE e.kind = 'workflow' AND w.id = e.endpoint_id));
    DELETE FROM endpoints WHERE workspace_id IS NULL;

    ALTER TABLE company_tags ALTER COLUMN workspace_id SET NOT NULL;
    ALTER TABLE lead_tags ALTER COLUMN workspace_id SET NOT NULL;
    ALTER TABLE idempotency_records ALTER COLUMN workspace_id SET NOT NULL;
    ALTER TABLE delivery_attempts ALTER COLUMN workspace_id SET NOT NULL;
    ALTER TABLE endpoints ALTER COLUMN workspace_id SET NOT NULL;

    ALTER TABLE company_tags DROP CONSTRAINT company_tags_company_id_fkey, DROP CONSTRAINT company_tags_tag_id_fkey;
    ALTER TABLE leads DROP CONSTRAINT leads_company_id_fkey;
    ALTER TABLE lead_identities DROP CONSTRAINT lead_identities_lead_id_fkey;
    ALTER TABLE lead_tags DROP CONSTRAINT lead_tags_lead_id_fkey, DROP CONSTRAINT lead_tags_tag_id_fkey;
    ALTER TABLE workflows DROP CONSTRAINT workflows_tag_id_fkey;
    ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;

    ALTER TABLE tags DROP CONSTRAINT tags_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE companies DROP CONSTRAINT companies_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE leads DROP CONSTRAINT leads_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE outbox DROP CONSTRAINT outbox_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE connectors DROP CONSTRAINT connectors_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE workflows DROP CONSTRAINT workflows_pkey, ADD PRIMARY KEY (id, workspace_id);
    ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey, ADD PRIMARY KEY (id, workspace_id),
      DROP CONSTRAINT deliveries_message_id_key, ADD CONSTRAINT deliveries_message_id_key UNIQUE (message_id, workspace_id);
    DROP INDEX deliveries_outbox_workflow_key;
    CREATE UNIQUE INDEX deliveries_outbox_workflow_key ON deliveries (outbox_id, workflow_id, workspace_id) WHERE outbox_id IS NOT NULL AND workflow_id IS NOT NULL;
    ALTER TABLE company_tags DROP CONSTRAINT company_tags_pkey, ADD PRIMARY KEY (company_id, tag_id, workspace_id);
    ALTER TABLE lead_tags DROP CONSTRAINT lead_tags_pkey, ADD PRIMARY KEY (lead_id, tag_id, workspace_id);
    ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_pkey, ADD PRIMARY KEY (api_key_id, key, workspace_id);
    ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey, ADD PRIMARY KEY (delivery_id, series, attempt, workspace_id);
    ALTER TABLE endpoints DROP CONSTRAINT endpoints_pkey, ADD PRIMARY KEY (kind, endpoint_id, workspace_id);

    ALTER TABLE company_tags
      ADD CONSTRAINT company_tags_company_id_fkey FOREIGN KEY (company_id, workspace_id) REFERENCES companies (id, workspace_id) ON DELETE CASCADE,
      ADD CONSTRAINT company_tags_tag_id_fkey FOREIGN KEY (tag_id, workspace_id) REFERENCES tags (id, workspace_id) ON DELETE CASCADE;
    ALTER TABLE leads
      ADD CONSTRAINT leads_company_id_fkey FOREIGN KEY (company_id, workspace_id) REFERENCES companies (id, workspace_id);
    ALTER TABLE lead_identities
      ADD CONSTRAINT lead_identities_lead_id_fkey FOREIGN KEY (lead_id, workspace_id) REFERENCES leads (id, workspace_id) ON DELETE CASCADE;
    ALTER TABLE lead_tags
      ADD CONSTRAINT lead_tags_lead_id_fkey FOREIGN KEY (lead_id, workspace_id) REFERENCES leads (id, workspace_id) ON DELETE CASCADE,
      ADD CONSTRAINT lead_tags_tag_id_fkey FOREIGN KEY (tag_id, workspace_id) REFERENCES tags (id, workspace_id) ON DELETE CASCADE;
    ALTER TABLE workflows
      ADD CONSTRAINT workflows_tag_id_fkey FOREIGN KEY (tag_id, workspace_id) REFERENCES tags (id, workspace_id) ON DELETE CASCADE;
    ALTER TABLE delivery_attempts
      ADD CONSTRAINT delivery_attempts_delivery_id_fkey FOREIGN KEY (delivery_id, workspace_id) REFERENCES deliveries (id, workspace_id) ON DELETE CASCADE;
    ALTER TABLE idempotency_records
      ADD CONSTRAINT idempotency_records_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE;
    ALTER TABLE endpoints
      ADD CONSTRAINT endpoints_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE;
  `.execute(db);
}

export async function down(): Promise<void> {
  // Narrowing the keys again is safe only on a database that was never distributed; nobody needs it.
}
