import { notifyKeysChanged, prefixesOfUser } from '../api-keys/repository.js';
import { recordUserChange, type Actor } from '../audit/service.js';
import { deleteSessionsOfUser } from '../console-auth/repository.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { Refused } from '../refused.js';
import { setRole } from '../users/members-repository.js';
import { deleteUser, findUser, type Role } from '../users/repository.js';

// A member's role changed or a member removed: what it does to their console sessions and API
// keys. Here, above users/, api-keys/ and console-auth/, so that none of them reaches into another.

/** The member as the audit log names them; another workspace's user reads as missing. */
async function requireMember(db: Executor, workspaceId: number, id: number) {
  const user = await findUser(db, id);
  if (!user || user.workspace_id !== workspaceId) throw new Refused('not_found', `User ${id} does not exist.`);
  return user;
}

/**
 * Changes a user's role: their console sessions end (they sign in again under the new role),
 * and every API process hears of their keys, which a role without the right to create keys
 * orphans (and a role with it brings back), as it hears of a removal's.
 */
export async function changeRole(db: Executor, actor: Actor, workspaceId: number, id: number, role: Role, keysChanged: (prefixes: string[]) => void = () => {}) {
  const { updated, prefixes } = await inTransaction(db, async (trx) => {
    const before = await requireMember(trx, workspaceId, id);
    const updated = await setRole(trx, id, role, workspaceId);
    if (!updated) throw new Refused('not_found', `User ${id} does not exist.`);
    await deleteSessionsOfUser(trx, id);
    const prefixes = await prefixesOfUser(trx, id);
    await notifyKeysChanged(trx, prefixes);
    await recordUserChange(trx, actor, before, 'member.role_changed', { from: before.role, to: role });
    return { updated, prefixes };
  });
  keysChanged(prefixes);
  return updated;
}

/**
 * Deletes a user: their keys become orphaned and are refused from then on. The API processes
 * hear it from this statement's notification (on Citus no trigger of a reference table would
 * reach them), so a cached key stops working at once; `keysChanged` is told the orphaned keys'
 * prefixes too, for a process that applies its own changes without waiting for it.
 */
export async function removeMember(db: Executor, actor: Actor, workspaceId: number, id: number, keysChanged: (prefixes: string[]) => void = () => {}) {
  const { deleted, orphaned } = await inTransaction(db, async (trx) => {
    const member = await requireMember(trx, workspaceId, id);
    const orphaned = await prefixesOfUser(trx, id);
    const deleted = await deleteUser(trx, id, workspaceId);
    if (!deleted) throw new Refused('not_found', `User ${id} does not exist.`);
    await notifyKeysChanged(trx, orphaned);
    await recordUserChange(trx, actor, member, 'member.removed', { role: member.role, orphaned_keys: orphaned.length });
    return { deleted, orphaned };
  });
  keysChanged(orphaned);
  return { id: deleted.id, deleted: true };
}
