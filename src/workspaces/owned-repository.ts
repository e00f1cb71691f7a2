import type { Executor } from '../db/connect.js';

/** The tables whose rows belong to one workspace, by an id column. */
export type OwnedTable = 'api_keys' | 'connectors' | 'workflows' | 'deliveries' | 'tags' | 'users' | 'leads';

/** Whether the row is the workspace's (asked with the workspace, so on Citus one node answers). */
export async function isInWorkspace(db: Executor, table: OwnedTable, id: number, workspaceId: number): Promise<boolean> {
  const row = await db.selectFrom(table).where('workspace_id', '=', workspaceId).where('id', '=', id).select('id').executeTakeFirst();
  return row !== undefined;
}
