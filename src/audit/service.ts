import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';
import { insertAuditEntry, listAuditEntries } from './repository.js';

// The audit log: every change an admin (the console) or an operator (the CLI) makes, recorded by
// the service that makes it, in its transaction. An entry names who, from where, what and
// which object; never a secret or a lead's personal data (details hold names of settings,
// roles, counts and times only).

/** Who made a change: a console user (with the client's address) or an operator with the admin CLI. */
export type Actor = { kind: 'user'; userId: number; email: string; address: string | null } | { kind: 'operator' };

/** The admin CLI: whoever runs it holds the database's credentials, and has no console identity. */
export const OPERATOR: Actor = Object.freeze({ kind: 'operator' });

/** Every action an entry may name, `<object>.<verb>` in the past tense (docs/operations.md lists them). */
export const AUDIT_ACTIONS = [
  'workspace.created',
  'member.added',
  'member.role_changed',
  'member.removed',
  'sign_in_link.minted',
  'password.set',
  'key.created',
  'key.revoked',
  'tag.created',
  'tag.updated',
  'company.created',
  'connector.created',
  'connector.updated',
  'connector.enabled',
  'connector.deleted',
  'connector.secret_revealed',
  'connector.secret_rotated',
  'workflow.created',
  'workflow.edited',
  'workflow.updated',
  'workflow.activated',
  'workflow.deactivated',
  'workflow.enabled',
  'workflow.deleted',
  'delivery.replayed',
  'delivery.recovered',
  'lead.erased',
  'lead.exported',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditTargetType = 'workspace' | 'user' | 'api_key' | 'tag' | 'company' | 'connector' | 'workflow' | 'delivery' | 'lead';

export interface AuditEntry {
  actor: Actor;
  workspaceId: number;
  action: AuditAction;
  target: { type: AuditTargetType; id: number | null };
  /** Plain facts about the change: no secret, no lead's personal data. */
  details?: Record<string, string | number | boolean | null | readonly string[]>;
}

/** Records one entry; call it with the transaction of the change, so both commit or neither. */
export async function recordAudit(trx: Executor, entry: AuditEntry): Promise<void> {
  const { actor } = entry;
  await insertAuditEntry(trx, {
    workspace_id: entry.workspaceId,
    actor_kind: actor.kind,
    actor_user_id: actor.kind === 'user' ? actor.userId : null,
    actor_email: actor.kind === 'user' ? actor.email : null,
    address: actor.kind === 'user' ? actor.address : null,
    action: entry.action,
    target_type: entry.target.type,
    target_id: entry.target.id,
    details: jsonParameter(entry.details ?? {}),
  });
}

/** An entry about a workspace user (a member, not a lead): it names them by id and email, so it still reads after they are removed. */
export const recordUserChange = (
  trx: Executor,
  actor: Actor,
  user: { id: number; workspace_id: number; email: string },
  action: AuditAction,
  details: NonNullable<AuditEntry['details']> = {},
) => recordAudit(trx, { actor, workspaceId: user.workspace_id, action, target: { type: 'user', id: user.id }, details: { email: user.email, ...details } });

export const AUDIT_PAGE_LIMIT = { min: 1, max: 1000, default: 100 };

/** `audit list` and the console's Audit log: a workspace's entries, newest first, in keyset pages. */
export async function listAudit(db: Executor, workspaceId: number, page: { limit: number; before?: number }) {
  const rows = await listAuditEntries(db, workspaceId, page);
  return rows.map((row) => ({
    id: row.id,
    at: row.at,
    actor: row.actor_kind === 'user' ? { type: 'user' as const, id: row.actor_user_id, email: row.actor_email } : { type: 'operator' as const },
    address: row.address,
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    details: row.details,
  }));
}
