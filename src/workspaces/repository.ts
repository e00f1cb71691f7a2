import type { Executor } from '../db/connect.js';

export function insertWorkspace(db: Executor, name: string) {
  return db.insertInto('workspaces').values({ name }).returning(['id', 'name']).executeTakeFirstOrThrow();
}

/** Marks the workspace as keeping a suppression list; true when it did not before. */
export async function markSuppressionList(db: Executor, id: number): Promise<boolean> {
  const marked = await db.updateTable('workspaces').set({ has_suppression_list: true }).where('id', '=', id).where('has_suppression_list', '=', false).returning('id').execute();
  return marked.length > 0;
}

export function findWorkspace(db: Executor, id: number) {
  return db.selectFrom('workspaces').where('id', '=', id).select(['id', 'name']).executeTakeFirst();
}
