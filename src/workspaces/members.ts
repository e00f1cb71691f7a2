import { notifyKeysChanged, prefixesOfUser } from '../api-keys/repository.js';
import { deleteSessionsOfUser } from '../console-auth/repository.js';
import type { Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { setRole } from '../users/members-repository.js';
import { deleteUser, type Role } from '../users/repository.js';

// A member's role changed or a member removed: what it does to their console sessions and API
// keys. Here, above users/, api-keys/ and console-auth/, so that none of them reaches into another.

/**
 * Changes a user's role: their console sessions end (they sign in again under the new role),
 * and every API process hears of their keys, which a role without the right to create keys
 * orphans (and a role with it brings back), as it hears of a removal's.
 */
export async function changeRole(db: Executor, workspaceId: number, id: number, role: Role, keysChanged: (prefixes: string[]) => void = () => {}) {
  const updated = await setRole(db, id, role, workspaceId);
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
export async function removeMember(db: Executor, workspaceId: number, id: number, keysChanged: (prefixes: string[]) => void = () => {}) {
  const orphaned = await prefixesOfUser(db, id);
  const deleted = await deleteUser(db, id, workspaceId);
  if (!deleted) throw new Refused('not_found', `User ${id} does not exist.`);
  await notifyKeysChanged(db, orphaned);
  keysChanged(orphaned);
  return { id: deleted.id, deleted: true };
}
