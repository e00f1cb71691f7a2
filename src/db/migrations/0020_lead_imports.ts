import { sql, type Kysely } from 'kysely';

// CSV imports of leads (src/lead-imports/): the job, and its input rows kept as parsed, each
// with what it became. The worker runs a job in chunks through POST /leads/batch's service;
// each chunk is sent under an Idempotency-Key of its own (`lead-import:<job>:<first row>`),
// so a chunk run again after a worker restart replays its stored answer instead of writing
// its rows a second time. Those records belong to no API key: api_key_id 0 is "the
// workspace's CSV imports", so idempotency_records.api_key_id loses its foreign key (API keys
// are never deleted, only revoked, so the cascade it gave never ran).
//
// The console's search finds a lead by any part of its name, emails, phones or company: the
// trigram indexes (pg_trgm, shipped with PostgreSQL's contrib and on every Citus node) serve
// `LIKE '%…%'` on each.
//
// Touches its own two tables, one foreign key of idempotency_records and indexes of its own.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    CREATE TABLE lead_imports (
      id bigint GENERATED ALWAYS AS IDENTITY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      created_by bigint,
      file_name text NOT NULL,
      delimiter text NOT NULL,
      columns jsonb NOT NULL,
      mapping jsonb,
      switches jsonb,
      status text NOT NULL DEFAULT 'mapping' CHECK (status IN ('mapping', 'queued', 'running', 'done', 'cancelled')),
      total integer NOT NULL,
      done integer NOT NULL DEFAULT 0,
      created integer NOT NULL DEFAULT 0,
      updated integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      locked_by text,
      locked_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      PRIMARY KEY (id, workspace_id)
    );
    CREATE INDEX lead_imports_due_idx ON lead_imports (workspace_id, id) WHERE status IN ('queued', 'running');

    CREATE TABLE lead_import_rows (
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      import_id bigint NOT NULL,
      ord integer NOT NULL,
      fields jsonb NOT NULL,
      status text CHECK (status IN ('created', 'updated', 'skipped', 'failed')),
      lead_id bigint,
      error text,
      PRIMARY KEY (import_id, ord, workspace_id),
      FOREIGN KEY (import_id, workspace_id) REFERENCES lead_imports (id, workspace_id) ON DELETE CASCADE
    );

    ALTER TABLE idempotency_records DROP CONSTRAINT IF EXISTS idempotency_records_api_key_id_fkey;

    CREATE INDEX leads_name_trgm_idx ON leads USING gin (lower(name) gin_trgm_ops);
    CREATE INDEX lead_identities_value_trgm_idx ON lead_identities USING gin (value gin_trgm_ops);
    CREATE INDEX companies_name_trgm_idx ON companies USING gin (lower(name) gin_trgm_ops);
    CREATE INDEX companies_domain_trgm_idx ON companies USING gin (domain gin_trgm_ops);
    CREATE INDEX leads_workspace_company_idx ON leads (workspace_id, company_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX leads_name_trgm_idx, lead_identities_value_trgm_idx, companies_name_trgm_idx, companies_domain_trgm_idx, leads_workspace_company_idx;
    DROP TABLE lead_import_rows, lead_imports;
  `.execute(db);
}
