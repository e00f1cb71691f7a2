import type { Executor } from '../db/connect.js';

export type Role = 'admin' | 'member';

// Roles grant permissions; only `update-companies` (needed to create API keys) exists so far.
const ROLE_PERMISSIONS: Record<Role, readonly string[]> = {
  admin: ['update-companies'],
  member: [],
};

export function roleHasPermission(role: Role, permission: string): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}

export function insertUser(db: Executor, user: { workspace_id: number; email: string; role: Role }) {
  return db.insertInto('users').values(user).returning(['id', 'email', 'role']).executeTakeFirstOrThrow();
}

export function findUser(db: Executor, id: number) {
  return db.selectFrom('users').where('id', '=', id).select(['id', 'workspace_id', 'email', 'role']).executeTakeFirst();
}

export function deleteUser(db: Executor, id: number, workspaceId: number) {
  return db.deleteFrom('users').where('workspace_id', '=', workspaceId).where('id', '=', id).returning('id').executeTakeFirst();
}
