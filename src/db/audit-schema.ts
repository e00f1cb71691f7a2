import type { Generated } from 'kysely';
import type { JsonWithDefault } from './column-types.js';

// Row type of the audit log (migration 0019): append-only, one row per change an admin or operator made.

export interface AuditLogTable {
  id: Generated<number>;
  workspace_id: number;
  at: Generated<string>;
  /** `user`: a console user (actor_user_id, actor_email, address); `operator`: the admin CLI. */
  actor_kind: 'user' | 'operator';
  actor_user_id: number | null;
  actor_email: string | null;
  /** The console client's address (as TRUST_PROXY lets express see it); null for the CLI. */
  address: string | null;
  action: string;
  target_type: string;
  target_id: number | null;
  /** What changed, without secrets or a lead's personal data: settings' names, roles, counts. */
  details: JsonWithDefault<Record<string, unknown>>;
}
