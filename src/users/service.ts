import type { Executor } from '../db/connect.js';
import { isUniqueViolation } from '../db/sql.js';
import { Refused } from '../refused.js';
import { insertUser, type Role } from './repository.js';
import { listMembers } from './members-repository.js';

// A workspace's members: add and list (a role changed or a member removed reaches their keys
// and sessions: src/workspaces/members.ts).

export async function addMember(db: Executor, workspaceId: number, email: string, role: Role) {
  try {
    return await insertUser(db, { workspace_id: workspaceId, email, role });
  } catch (error) {
    if (isUniqueViolation(error)) throw new Refused('conflict', `${email} is already a member of this workspace.`);
    throw error;
  }
}

export const listWorkspaceMembers = (db: Executor, workspaceId: number) => listMembers(db, workspaceId);
