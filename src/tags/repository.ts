import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { TagRow } from '../db/schema.js';
import { TAG_COLUMNS, tagOrder } from './columns.js';

export function listTags(db: Executor, workspaceId: number, includeArchived: boolean) {
  let query = db.selectFrom('tags').where('workspace_id', '=', workspaceId).select(TAG_COLUMNS);
  if (!includeArchived) query = query.where('active', '=', true);
  return query.orderBy(tagOrder('tags')).execute();
}

export type NewTag = Pick<TagRow, 'name' | 'color' | 'active'>;

/** The one INSERT of tags, in the order given, returning each as stored. Built, not run: callers add their conflict rule. */
function tagsInsert(db: Executor, workspaceId: number, tags: readonly NewTag[]) {
  return db
    .insertInto('tags')
    .values(tags.map((tag) => ({ workspace_id: workspaceId, ...tag })))
    .returning(TAG_COLUMNS);
}

/** One tag as an operator creates it; fails with a unique violation (23505) when the workspace has its name. */
export function insertTag(db: Executor, tag: NewTag & { workspace_id: number }) {
  const { workspace_id: workspaceId, ...values } = tag;
  return tagsInsert(db, workspaceId, [values]).executeTakeFirstOrThrow();
}

/**
 * The statement that creates, active and without a color, the tags of these names the
 * workspace does not have yet (race-safe), returning only the ones it created. Built, not
 * run: a caller may run it inside a larger statement. `names` must not be empty.
 */
export function missingTagsInsert(db: Executor, workspaceId: number, names: readonly string[]) {
  return tagsInsert(
    db,
    workspaceId,
    names.map((name) => ({ name, color: null, active: true })),
  ).onConflict((oc) => oc.expression(sql`workspace_id, lower(name)`).doNothing());
}

/** Creates the tags that do not exist yet (race-safe) and returns the ones it created. */
export function insertMissingTags(db: Executor, workspaceId: number, names: readonly string[]) {
  if (names.length === 0) return Promise.resolve([]);
  return missingTagsInsert(db, workspaceId, names).execute();
}

export function findTagsByNames(db: Executor, workspaceId: number, names: readonly string[]) {
  if (names.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('tags')
    .where('workspace_id', '=', workspaceId)
    .where(
      sql`lower(name)`,
      'in',
      names.map((name) => name.toLowerCase()),
    )
    .select(TAG_COLUMNS)
    .execute();
}
