import type { Executor } from '../db/connect.js';

/** The tables whose rows belong to one workspace, by an id column. */
export type OwnedTable = 'api_keys' | 'connectors' | 'workflows' | 'deliveries' | 'tags' | 'users' | 'leads';

/** The workspace a row belongs to (undefined when there is no such row). */
export async function workspaceOf(db: Executor, table: OwnedTable, id: number): Promise<number | undefined> {
  const row = await db.selectFrom(table).where('id', '=', id).select('workspace_id').executeTakeFirst();
  return row?.workspace_id;
}
