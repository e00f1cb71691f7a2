import { sql, type Kysely } from 'kysely';

// The workspace's audit log: who changed what, from where, written in the transaction of the
// change it records (src/audit/service.ts). Append-only: a trigger refuses every UPDATE, and
// every DELETE but the retention purge's, whoever runs it (the table's owner too: triggers,
// unlike row security, bind owners). The purge marks its transaction with
// `SET LOCAL audit_log.purge = 'on'` (src/audit/repository.ts); nothing else sets it. A
// superuser can still drop the trigger: the guard is against the application's own mistakes
// and a stray statement, not against the database's administrator (docs/operations.md).
//
// Every entry belongs to a workspace (no operator-wide entries): it is distributed by
// workspace_id on Citus like the other tenant tables. No ON DELETE CASCADE from workspaces:
// a cascade would be a DELETE the trigger refuses; workspaces are never deleted by the service.
//
// Touches only its own table and function.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE audit_log (
      id bigint GENERATED ALWAYS AS IDENTITY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id),
      at timestamptz NOT NULL DEFAULT now(),
      actor_kind text NOT NULL CHECK (actor_kind IN ('user', 'operator')),
      actor_user_id bigint,
      actor_email text,
      address text,
      action text NOT NULL,
      target_type text NOT NULL,
      target_id bigint,
      details jsonb NOT NULL DEFAULT '{}',
      PRIMARY KEY (workspace_id, id)
    );
    CREATE INDEX audit_log_at ON audit_log (at);

    CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND current_setting('audit_log.purge', true) = 'on' THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END
    $$;
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE audit_log; DROP FUNCTION audit_log_append_only();`.execute(db);
}
