import { sql, type Kysely } from 'kysely';

// API processes keep a view of every existing key prefix, so a token whose prefix belongs to
// no key is refused without a query (src/api-keys/prefix-view.ts). The view must hear of new
// keys: the trigger now fires on INSERT too, and a changed prefix names the old and the new
// one. ENABLE ALWAYS keeps it firing in sessions with session_replication_role = replica
// (logical replication, bulk loads), whose new keys would otherwise go unheard. The view
// checks that this trigger fires on INSERT before it trusts itself (keyCreationIsNotified).
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION notify_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.prefix IS DISTINCT FROM OLD.prefix THEN
        PERFORM pg_notify('api_key_changed', OLD.prefix);
      END IF;
      PERFORM pg_notify('api_key_changed', COALESCE(NEW.prefix, OLD.prefix));
      RETURN NULL;
    END $$;
    DROP TRIGGER api_keys_changed ON api_keys;
    CREATE TRIGGER api_keys_changed
      AFTER INSERT OR UPDATE OF prefix, revoked_at, expires_at, user_id, scopes, name, workspace_id OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_api_key_changed();
    ALTER TABLE api_keys ENABLE ALWAYS TRIGGER api_keys_changed;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TRIGGER api_keys_changed ON api_keys;
    CREATE OR REPLACE FUNCTION notify_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('api_key_changed', COALESCE(NEW.prefix, OLD.prefix));
      RETURN NULL;
    END $$;
    CREATE TRIGGER api_keys_changed
      AFTER UPDATE OF revoked_at, expires_at, user_id, scopes, name, workspace_id OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_api_key_changed();
  `.execute(db);
}
