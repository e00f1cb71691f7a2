import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { Role } from './repository.js';

/** The workspace's users with whether they have a password and how many keys they made that still work. */
export function listMembers(db: Executor, workspaceId: number) {
  return db
    .selectFrom('users as u')
    .where('u.workspace_id', '=', workspaceId)
    .select([
      'u.id',
      'u.email',
      'u.role',
      'u.created_at',
      sql<boolean>`u.password_hash IS NOT NULL`.as('password_set'),
      sql<number>`(SELECT count(*)::int FROM api_keys k WHERE k.user_id = u.id AND k.revoked_at IS NULL)`.as('keys'),
    ])
    .orderBy('u.id')
    .execute();
}

export function setRole(db: Executor, id: number, role: Role, workspaceId: number) {
  return db.updateTable('users').set({ role }).where('workspace_id', '=', workspaceId).where('id', '=', id).returning(['id', 'email', 'role']).executeTakeFirst();
}
