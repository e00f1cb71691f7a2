import { sql, type Kysely } from 'kysely';

// Outbound delivery: webhook connectors, workflows with one Send Webhook block, and the
// deliveries the dispatcher makes from outbox events (one row per message to send, its
// attempts recorded beside it).
//
// A delivery row holds the request exactly as composed (URL after merge tags, headers,
// encoded payload) so every retry sends the same bytes under the same `webhook-id`.
// Workflow blocks keep the connector id without a foreign key: a connector that is
// missing, deleted or of another workspace is a configuration error recorded on the
// delivery at run time, as the spec asks, not a reason to refuse saving the workflow.
//
// One `up` of DDL in order, longer than a function should be: a migration is read as the
// schema it creates, top to bottom, and never changes once applied.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE connectors (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      kind text NOT NULL DEFAULT 'webhook' CHECK (kind IN ('webhook')),
      url text NOT NULL,
      method text NOT NULL CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
      format text NOT NULL CHECK (format IN ('json', 'form')),
      auth jsonb NOT NULL DEFAULT '{"type":"none"}',
      mapping jsonb NOT NULL DEFAULT '[]',
      fields jsonb NOT NULL DEFAULT '[]',
      headers jsonb NOT NULL DEFAULT '[]',
      auto_push boolean NOT NULL DEFAULT false,
      signing_secret text NOT NULL,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX connectors_auto_push_idx ON connectors (workspace_id) WHERE auto_push AND deleted_at IS NULL;

    CREATE TABLE workflows (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      trigger text NOT NULL CHECK (trigger IN ('lead_created', 'tag_added')),
      tag_id bigint REFERENCES tags (id) ON DELETE CASCADE,
      block jsonb NOT NULL,
      signing_secret text NOT NULL,
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((trigger = 'tag_added') = (tag_id IS NOT NULL))
    );
    CREATE INDEX workflows_trigger_idx ON workflows (workspace_id, trigger, tag_id) WHERE active;

    -- event: lead | workflow | test (the envelope's event);
    -- sender: connector_push | saved_connector | custom_url | test (who composed it).
    CREATE TABLE deliveries (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      event text NOT NULL CHECK (event IN ('lead', 'workflow', 'test')),
      sender text NOT NULL CHECK (sender IN ('connector_push', 'saved_connector', 'custom_url', 'test')),
      trigger text NOT NULL,
      connector_id bigint,
      workflow_id bigint,
      lead_id bigint,
      outbox_id bigint,
      message_id text NOT NULL UNIQUE,
      url text NOT NULL,
      method text NOT NULL,
      headers jsonb NOT NULL DEFAULT '[]',
      body text,
      content_type text,
      signing_secret text,
      max_attempts integer NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      branch text NOT NULL DEFAULT 'pending' CHECK (branch IN ('pending', 'Delivered', 'Failed')),
      status_code integer,
      error text,
      reply text,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      locked_until timestamptz,
      locked_by text,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz
    );
    CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at, id) WHERE branch = 'pending';
    CREATE INDEX deliveries_workspace_lead_idx ON deliveries (workspace_id, lead_id, id);
    -- One message per workflow and outbox event: fanning the same event out twice cannot duplicate.
    CREATE UNIQUE INDEX deliveries_outbox_workflow_key ON deliveries (outbox_id, workflow_id) WHERE outbox_id IS NOT NULL AND workflow_id IS NOT NULL;

    CREATE TABLE delivery_attempts (
      delivery_id bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      status_code integer,
      error text,
      reply text,
      duration_ms integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (delivery_id, attempt)
    );

    CREATE INDEX leads_company_unanalyzed_idx ON leads (company_id) WHERE analyzed_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX leads_company_unanalyzed_idx;
    DROP TABLE delivery_attempts, deliveries, workflows, connectors;
  `.execute(db);
}
