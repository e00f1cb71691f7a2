import { recordUserChange, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { isUniqueViolation } from '../db/sql.js';
import { Refused } from '../refused.js';
import { insertUser, type Role } from './repository.js';
import { listMembers } from './members-repository.js';

// A workspace's members: add and list (a role changed or a member removed reaches their keys
// and sessions: src/workspaces/members.ts).

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

export const listWorkspaceMembers = (db: Executor, workspaceId: number) => listMembers(db, workspaceId);
