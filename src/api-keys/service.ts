import type { Scope } from '../../generated/api.js';
import { recordAudit, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { Refused } from '../refused.js';
import { findUser, roleHasPermission, type Role } from '../users/repository.js';
import { insertKey, revokeKey } from './repository.js';
import { generateToken } from './tokens.js';

const KEY_CREATION_PERMISSION = 'update-companies';

/**
 * Orphaned: its creator no longer exists or no longer holds the permission to create keys (a
 * demoted admin's keys stop with the demotion). Authentication refuses such a key.
 */
export const keyIsOrphaned = (key: { user_id: number | null; creator_role: Role | null }): boolean =>
  key.user_id === null || key.creator_role === null || !roleHasPermission(key.creator_role, KEY_CREATION_PERMISSION);

/** Whether a user in this role keeps keys working (see keyIsOrphaned). */
export const roleKeepsKeys = (role: Role): boolean => roleHasPermission(role, KEY_CREATION_PERMISSION);

export async function createApiKey(
  db: Executor,
  actor: Actor,
  input: {
    workspaceId: number;
    userId: number;
    name: string;
    scopes: Scope[];
    expiresAt: string | null;
  },
) {
  const user = await findUser(db, input.userId);
  if (!user || user.workspace_id !== input.workspaceId) {
    throw new Refused('user_not_in_workspace', `User ${input.userId} does not belong to workspace ${input.workspaceId}.`);
  }
  if (!roleHasPermission(user.role, KEY_CREATION_PERMISSION)) {
    throw new Refused('permission_denied', `User ${input.userId} lacks the "${KEY_CREATION_PERMISSION}" permission needed to create API keys.`);
  }
  const { prefix, token, hash } = generateToken();
  return inTransaction(db, async (trx) => {
    const key = await insertKey(trx, {
      workspace_id: input.workspaceId,
      user_id: input.userId,
      name: input.name,
      prefix,
      token_hash: hash,
      scopes: input.scopes,
      expires_at: input.expiresAt,
    });
    await recordAudit(trx, {
      actor,
      workspaceId: input.workspaceId,
      action: 'key.created',
      target: { type: 'api_key', id: key.id },
      details: { name: input.name, prefix, scopes: input.scopes, expires_at: input.expiresAt, user_id: input.userId },
    });
    return { ...key, token };
  });
}

/**
 * `key revoke` and the console's Revoke key: one of the workspace's keys (another workspace's is
 * refused as a missing one), refused from then on (every API process hears of it).
 */
export function revokeApiKey(db: Executor, actor: Actor, keyId: number, workspaceId: number) {
  return inTransaction(db, async (trx) => {
    const revoked = await revokeKey(trx, keyId, workspaceId);
    if (!revoked) throw new Refused('not_found', `API key ${keyId} does not exist.`);
    await recordAudit(trx, { actor, workspaceId: revoked.workspace_id, action: 'key.revoked', target: { type: 'api_key', id: revoked.id } });
    return { id: revoked.id, prefix: revoked.prefix };
  });
}
