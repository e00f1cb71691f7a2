import { sql, type Kysely } from 'kysely';

// The workspace console (/console): people sign in with a password or a single-use link that
// an operator mints with the CLI, and hold a session. Tokens are never stored, only their
// SHA-256, so a copy of the database signs nobody in.
//
// - users.password_hash: argon2id (PHC string), NULL until `user set-password` (or never:
//   such a user signs in by link only).
// - console_sign_in_links: 15 minutes, one use (used_at set by the redeeming statement).
// - console_sessions: expire idle (last_seen_at) and absolutely (expires_at); signing out
//   deletes the row; deleting the user deletes them.
// - console_sign_in_failures: one row per wrong password, per subject (`email:<address>` and
//   `address:<ip>`), read over a short window to slow and then refuse guessing.
// - Two indexes for the console's lead list: newest first per workspace (a keyset on id) and
//   a name prefix search.
//
// Touches only its own tables, one column of users and two indexes of leads.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE users ADD COLUMN password_hash text;

    CREATE TABLE console_sign_in_links (
      token_hash bytea PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX console_sign_in_links_user_idx ON console_sign_in_links (user_id);

    CREATE TABLE console_sessions (
      token_hash bytea PRIMARY KEY,
      workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX console_sessions_user_idx ON console_sessions (user_id);

    CREATE TABLE console_sign_in_failures (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      subject text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX console_sign_in_failures_subject_idx ON console_sign_in_failures (subject, created_at);

    CREATE INDEX leads_workspace_newest_idx ON leads (workspace_id, id);
    CREATE INDEX leads_workspace_name_prefix_idx ON leads (workspace_id, lower(name) text_pattern_ops);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX leads_workspace_name_prefix_idx;
    DROP INDEX leads_workspace_newest_idx;
    DROP TABLE console_sign_in_failures, console_sessions, console_sign_in_links;
    ALTER TABLE users DROP COLUMN password_hash;
  `.execute(db);
}
