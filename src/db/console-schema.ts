import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from './column-types.js';

// Row types of the console's tables (migration 0012): tokens are kept only as their SHA-256.

export interface ConsoleSignInLinksTable {
  token_hash: Buffer;
  workspace_id: number;
  user_id: number;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: Generated<string>;
  /** The console user who minted it (migration 0017); null: an operator with the CLI. */
  minted_by: number | null;
}

export interface ConsoleSessionsTable {
  token_hash: Buffer;
  workspace_id: number;
  user_id: number;
  created_at: Generated<string>;
  last_seen_at: Generated<string>;
  expires_at: Timestamp;
}

export interface ConsoleSignInFailuresTable {
  id: Generated<number>;
  subject: string;
  created_at: Generated<string>;
}
