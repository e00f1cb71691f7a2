import type { Executor } from '../db/connect.js';
import { isUniqueViolation } from '../db/sql.js';
import { notifyKeysChanged, prefixesOfUser } from '../api-keys/repository.js';
import { deleteSessionsOfUser } from '../console-auth/repository.js';
import { Refused } from '../refused.js';
import { deleteUser, insertUser, type Role } from './repository.js';
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

export async function addMember(db: Executor, workspaceId: number, email: string, role: Role) {
  try {
    return await insertUser(db, { workspace_id: workspaceId, email, role });
  } catch (error) {
    if (isUniqueViolation(error)) throw new Refused('conflict', `${email} is already a member of this workspace.`);
    throw error;
  }
}

export const listWorkspaceMembers = (db: Executor, workspaceId: number) => listMembers(db, workspaceId);

/**
 * Changes a user's role: their console sessions end (they sign in again under the new role),
 * and every API process hears of their keys, which a role without the right to create keys
 * orphans (and a role with it brings back), as it hears of a removal's.
 */
export async function changeRole(db: Executor, id: number, role: Role, keysChanged: (prefixes: string[]) => void = () => {}) {
  const updated = await setRole(db, id, role);
  if (!updated) throw new Refused('not_found', `User ${id} does not exist.`);
  await deleteSessionsOfUser(db, id);
  const prefixes = await prefixesOfUser(db, id);
  await notifyKeysChanged(db, prefixes);
  keysChanged(prefixes);
  return updated;
}

/**
 * Deletes a user: their keys become orphaned and are refused from then on. The API processes
 * hear it from this statement's notification (on Citus no trigger of a reference table would
 * reach them), so a cached key stops working at once; `keysChanged` is told the orphaned keys'
 * prefixes too, for a process that applies its own changes without waiting for it.
 */
export async function removeMember(db: Executor, id: number, keysChanged: (prefixes: string[]) => void = () => {}) {
  const orphaned = await prefixesOfUser(db, id);
  const deleted = await deleteUser(db, id);
  if (!deleted) throw new Refused('not_found', `User ${id} does not exist.`);
  await notifyKeysChanged(db, orphaned);
  keysChanged(orphaned);
  return { id: deleted.id, deleted: true };
}
