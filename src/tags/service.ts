import { recordAudit, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { isUniqueViolation } from '../db/sql.js';
import { Refused } from '../refused.js';
import { insertTag, type NewTag } from './repository.js';
import { updateTagRow } from './update-repository.js';

// Tags as an operator or a workspace admin manages them: names unique per workspace, ignoring case.

const nameTaken = (name: string) => new Refused('conflict', `The workspace already has a tag named "${name}" (names are compared ignoring case).`);

export function createTag(db: Executor, actor: Actor, workspaceId: number, tag: NewTag) {
  return inTransaction(db, async (trx) => {
    const created = await insertTag(trx, { workspace_id: workspaceId, ...tag }).catch((error: unknown) => {
      if (isUniqueViolation(error)) throw nameTaken(tag.name);
      throw error;
    });
    await recordAudit(trx, { actor, workspaceId, action: 'tag.created', target: { type: 'tag', id: created.id }, details: { name: created.name } });
    return created;
  });
}

/** `tag update`: rename, colour (null clears it), archive (active false) or restore. */
export async function updateTag(db: Executor, actor: Actor, id: number, changes: Partial<NewTag>, workspaceId: number) {
  if (Object.values(changes).every((value) => value === undefined)) throw new Refused('invalid_argument', 'Give a name, a colour, or archive or restore it.');
  return inTransaction(db, async (trx) => {
    const updated = await updateTagRow(trx, id, changes, workspaceId).catch((error: unknown) => {
      if (isUniqueViolation(error)) throw nameTaken(changes.name ?? '');
      throw error;
    });
    if (!updated) throw new Refused('not_found', `Tag ${id} does not exist.`);
    const { workspace_id, ...shown } = updated;
    await recordAudit(trx, { actor, workspaceId: workspace_id, action: 'tag.updated', target: { type: 'tag', id }, details: { ...changes } });
    return shown;
  });
}
