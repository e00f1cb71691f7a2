import { recordUserChange, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { isUniqueViolation } from '../db/sql.js';
import { notifyKeysChanged, prefixesOfUser } from '../api-keys/repository.js';
import { deleteSessionsOfUser } from '../console-auth/repository.js';
import { Refused } from '../refused.js';
import { deleteUser, findUser, insertUser, type Role } from './repository.js';
import { listMembers, setRole } from './members-repository.js';

// A workspace's members: add, list, change role, remove (their API keys become orphaned).

export function parseEmail(value: string, field: string): string {
  const email = value.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw new Refused('invalid_argument', `${field} must be an email address, got "${value}".`);
  return email;
}

export function parseRole(value: string | undefined, field: string): Role {
  if (value === undefined) return 'admin';
  if (value !== 'admin' && value !== 'member') throw new Refused('invalid_argument', `${field} must be admin or member.`);
  return value;
}

export function addMember(db: Executor, actor: Actor, workspaceId: number, email: string, role: Role) {
  return inTransaction(db, async (trx) => {
    const added = await insertUser(trx, { workspace_id: workspaceId, email, role }).catch((error: unknown) => {
      if (isUniqueViolation(error)) throw new Refused('conflict', `${email} is already a member of this workspace.`);
      throw error;
    });
    await recordUserChange(trx, actor, { id: added.id, workspace_id: workspaceId, email }, 'member.added', { role });
    return added;
  });
}

async function requireMember(db: Executor, id: number) {
  const user = await findUser(db, id);
  if (!user) throw new Refused('not_found', `User ${id} does not exist.`);
  return user;
}

export const listWorkspaceMembers = (db: Executor, workspaceId: number) => listMembers(db, workspaceId);

/**
 * Changes a user's role: their console sessions end (they sign in again under the new role),
 * and every API process hears of their keys, which a role without the right to create keys
 * orphans (and a role with it brings back), as it hears of a removal's.
 */
export async function changeRole(db: Executor, actor: Actor, id: number, role: Role, keysChanged: (prefixes: string[]) => void = () => {}) {
  const { updated, prefixes } = await inTransaction(db, async (trx) => {
    const before = await requireMember(trx, id);
    const updated = await setRole(trx, id, role);
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
export async function removeMember(db: Executor, actor: Actor, id: number, keysChanged: (prefixes: string[]) => void = () => {}) {
  const { deleted, orphaned } = await inTransaction(db, async (trx) => {
    const member = await requireMember(trx, id);
    const orphaned = await prefixesOfUser(trx, id);
    const deleted = await deleteUser(trx, id);
    if (!deleted) throw new Refused('not_found', `User ${id} does not exist.`);
    await notifyKeysChanged(trx, orphaned);
    await recordUserChange(trx, actor, member, 'member.removed', { role: member.role, orphaned_keys: orphaned.length });
    return { deleted, orphaned };
  });
  keysChanged(orphaned);
  return { id: deleted.id, deleted: true };
}
