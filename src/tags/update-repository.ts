import type { Executor } from '../db/connect.js';
import type { TagRow } from '../db/schema.js';
import { TAG_COLUMNS } from './columns.js';

/** Renames, recolours, archives or restores a tag (each when given); fails with 23505 when the name is taken. */
export function updateTagRow(db: Executor, id: number, changes: Partial<Pick<TagRow, 'name' | 'color' | 'active'>>, workspaceId: number) {
  return db
    .updateTable('tags')
    .set(changes)
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .returning([...TAG_COLUMNS, 'workspace_id'])
    .executeTakeFirst();
}
