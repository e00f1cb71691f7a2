import type { Scope } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
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
  const key = await insertKey(db, {
    workspace_id: input.workspaceId,
    user_id: input.userId,
    name: input.name,
    prefix,
    token_hash: hash,
    scopes: input.scopes,
    expires_at: input.expiresAt,
  });
  return { ...key, token };
}

/** Revokes one of the workspace's keys (another workspace's is refused as a missing one); every API process refuses it once it hears. */
export async function revokeApiKey(db: Executor, id: number, workspaceId: number) {
  const revoked = await revokeKey(db, id, workspaceId);
  if (!revoked) throw new Refused('not_found', `API key ${id} does not exist.`);
  return revoked;
}
