import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

export function listTags(db: Executor, workspaceId: number, includeArchived: boolean) {
  let query = db.selectFrom('tags').where('workspace_id', '=', workspaceId).select(['id', 'name', 'color', 'active']);
  if (!includeArchived) query = query.where('active', '=', true);
  return query.orderBy(sql`lower(name)`).orderBy('name').orderBy('id').execute();
}

export function insertTag(db: Executor, tag: { workspace_id: number; name: string; color: string | null; active: boolean }) {
  return db.insertInto('tags').values(tag).returning(['id', 'name', 'color', 'active']).executeTakeFirstOrThrow();
}

export function findTagsByNames(db: Executor, workspaceId: number, names: readonly string[]) {
  if (names.length === 0) return Promise.resolve([]);
  return db.selectFrom('tags').where('workspace_id', '=', workspaceId)
    .where(sql`lower(name)`, 'in', names.map((name) => name.toLowerCase()))
    .select(['id', 'name', 'color', 'active']).execute();
}

/** Creates the tags that do not exist yet (race-safe) and returns the ones it created. */
export function insertMissingTags(db: Executor, workspaceId: number, names: readonly string[]) {
  if (names.length === 0) return Promise.resolve([]);
  return db.insertInto('tags')
    .values(names.map((name) => ({ workspace_id: workspaceId, name, color: null, active: true })))
    .onConflict((oc) => oc.expression(sql`workspace_id, lower(name)`).doNothing())
    .returning(['id', 'name', 'color', 'active'])
    .execute();
}
