import { sql, type Kysely } from 'kysely';

// The whole data model of the spec, written as plain DDL because constraints, partial
// indexes and expression indexes read better in SQL than through the schema builder.
//
// Display lists (emails, phones, links, locations, custom fields) live on the lead and
// company rows so one row read serves GET /leads/{id}; the normalized keys used for
// deduplication live in lead_identities, whose primary key makes two leads of one
// workspace sharing an email, LinkedIn handle or phone tail impossible, so parallel
// requests for the same person cannot both create it.
//
// One `up` of DDL in order, longer than a function should be: a migration is read as the
// schema it creates, top to bottom, and never changes once applied.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE workspaces (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE users (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'member')),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, email)
    );

    -- user_id becomes NULL when the creating user is deleted: the key is then orphaned.
    CREATE TABLE api_keys (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      user_id bigint REFERENCES users (id) ON DELETE SET NULL,
      name text NOT NULL,
      prefix text NOT NULL UNIQUE,
      token_hash bytea NOT NULL,
      scopes text[] NOT NULL DEFAULT '{}',
      expires_at timestamptz,
      revoked_at timestamptz,
      last_used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id);

    -- API processes cache authenticated keys; this tells them at once when a key changes
    -- (revoked, expiry moved, creator deleted: user_id set to NULL by the foreign key).
    CREATE FUNCTION notify_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('api_key_changed', COALESCE(NEW.prefix, OLD.prefix));
      RETURN NULL;
    END $$;
    CREATE TRIGGER api_keys_changed
      AFTER UPDATE OF revoked_at, expires_at, user_id, scopes, name, workspace_id OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_api_key_changed();

    CREATE TABLE tags (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      name text NOT NULL,
      color text,
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    -- Tag names are matched case-insensitively so "VIP" and "vip" stay one tag.
    CREATE UNIQUE INDEX tags_workspace_name_key ON tags (workspace_id, lower(name));

    CREATE TABLE companies (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      name text,
      domain text,
      industry text,
      size text,
      description text,
      status text NOT NULL DEFAULT 'not_analyzed'
        CHECK (status IN ('pending', 'analyzed', 'failed', 'not_analyzed')),
      links jsonb NOT NULL DEFAULT '[]',
      emails text[] NOT NULL DEFAULT '{}',
      phones text[] NOT NULL DEFAULT '{}',
      locations jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX companies_workspace_domain_key ON companies (workspace_id, domain) WHERE domain IS NOT NULL;
    CREATE INDEX companies_workspace_name_idx ON companies (workspace_id, lower(name));

    CREATE TABLE company_tags (
      company_id bigint NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
      tag_id bigint NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (company_id, tag_id)
    );

    CREATE TABLE leads (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      company_id bigint REFERENCES companies (id) ON DELETE SET NULL,
      name text NOT NULL,
      job_title text,
      description text,
      gender text,
      language text,
      decision_maker boolean NOT NULL DEFAULT false,
      stage text NOT NULL DEFAULT 'new'
        CHECK (stage IN ('new', 'contacted', 'engaged', 'qualified', 'converted', 'lost')),
      source text NOT NULL,
      chargeable boolean NOT NULL DEFAULT false,
      emails text[] NOT NULL DEFAULT '{}',
      phones text[] NOT NULL DEFAULT '{}',
      links jsonb NOT NULL DEFAULT '[]',
      locations jsonb NOT NULL DEFAULT '[]',
      custom_fields jsonb NOT NULL DEFAULT '{}',
      crm_record_id text,
      analyzed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX leads_workspace_idx ON leads (workspace_id);
    CREATE INDEX leads_company_idx ON leads (company_id);

    -- kind: 'email' (lower-cased address), 'linkedin' (lower-cased /in/ handle),
    -- 'phone' (last 10 digits, all digits when 7 to 9).
    CREATE TABLE lead_identities (
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('email', 'linkedin', 'phone')),
      value text NOT NULL,
      lead_id bigint NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
      PRIMARY KEY (workspace_id, kind, value)
    );
    CREATE INDEX lead_identities_lead_idx ON lead_identities (lead_id);

    CREATE TABLE lead_tags (
      lead_id bigint NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
      tag_id bigint NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (lead_id, tag_id)
    );
    CREATE INDEX lead_tags_tag_idx ON lead_tags (tag_id);

    -- One stored answer per (API key, Idempotency-Key). The row is inserted at the start
    -- of the request's transaction, so a concurrent request with the same key waits on it.
    CREATE TABLE idempotency_records (
      api_key_id bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
      key text NOT NULL,
      fingerprint text NOT NULL,
      status_code integer,
      response_body jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (api_key_id, key)
    );
    CREATE INDEX idempotency_records_created_idx ON idempotency_records (created_at);

    -- Transactional outbox: written in the same transaction as the change that caused it,
    -- drained by the worker with FOR UPDATE SKIP LOCKED and a lease.
    CREATE TABLE outbox (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      topic text NOT NULL,
      payload jsonb NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      available_at timestamptz NOT NULL DEFAULT now(),
      locked_until timestamptz,
      locked_by text,
      processed_at timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX outbox_pending_idx ON outbox (available_at, id) WHERE processed_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE outbox, idempotency_records, lead_tags, lead_identities, leads,
      company_tags, companies, tags, api_keys, users, workspaces;
    DROP FUNCTION notify_api_key_changed();
  `.execute(db);
}
