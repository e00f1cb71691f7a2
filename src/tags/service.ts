import type { Executor } from '../db/connect.js';
import { isUniqueViolation } from '../db/sql.js';
import { Refused } from '../refused.js';
import { insertTag, type NewTag } from './repository.js';
import { updateTagRow } from './update-repository.js';

// Tags as an operator or a workspace admin manages them: names unique per workspace, ignoring case.

const nameTaken = (name: string) => new Refused('conflict', `The workspace already has a tag named "${name}" (names are compared ignoring case).`);

export async function createTag(db: Executor, workspaceId: number, tag: NewTag) {
  try {
    return await insertTag(db, { workspace_id: workspaceId, ...tag });
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(tag.name);
    throw error;
  }
}

/** `tag update`: rename, colour (null clears it), archive (active false) or restore. */
export async function updateTag(db: Executor, id: number, changes: Partial<NewTag>, workspaceId: number) {
  if (Object.values(changes).every((value) => value === undefined)) throw new Refused('invalid_argument', 'Give a name, a colour, or archive or restore it.');
  try {
    const updated = await updateTagRow(db, id, changes, workspaceId);
    if (!updated) throw new Refused('not_found', `Tag ${id} does not exist.`);
    return updated;
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(changes.name ?? '');
    throw error;
  }
}
