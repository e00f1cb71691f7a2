import type { Executor } from '../db/connect.js';

/** The tables whose rows belong to one workspace, by an id column. */
export type OwnedTable = 'api_keys' | 'connectors' | 'workflows' | 'deliveries' | 'tags' | 'users' | 'leads';

/** The workspace of a row named by its id alone, in any workspace (the operator's commands); undefined when there is none. */
export async function workspaceOfRow(db: Executor, table: OwnedTable, id: number): Promise<number | undefined> {
  const row = await db.selectFrom(table).where('id', '=', id).select('workspace_id').executeTakeFirst();
  return row?.workspace_id;
}

/** Whether the row is the workspace's (asked with the workspace, so on Citus one node answers). */
export async function isInWorkspace(db: Executor, table: OwnedTable, id: number, workspaceId: number): Promise<boolean> {
  const row = await db.selectFrom(table).where('workspace_id', '=', workspaceId).where('id', '=', id).select('id').executeTakeFirst();
  return row !== undefined;
}
