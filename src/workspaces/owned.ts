import type { Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { isInWorkspace, workspaceOfRow, type OwnedTable } from './owned-repository.js';

// Services that act on one workspace's rows take it, required, and refuse another
// workspace's row as a missing one: the console passes the session's, and the CLI, whose
// operator names ids alone, first asks which workspace the id is in (workspaceOfId). Services
// that still take bare ids (the operator's own) are called by the console only after
// requireInWorkspace has checked the id; another workspace's row gets the very refusal of a
// missing one.

const NOUN: Record<OwnedTable, string> = {
  api_keys: 'API key',
  connectors: 'Connector',
  workflows: 'Workflow',
  deliveries: 'Delivery',
  tags: 'Tag',
  users: 'User',
  leads: 'Lead',
};

/**
 * The workspace of the row an operator names by its id alone (the CLI, across workspaces):
 * the services then act in that workspace, as for a session's; refused as missing when no
 * workspace has it.
 */
export async function workspaceOfId(db: Executor, table: OwnedTable, id: number): Promise<number> {
  const workspaceId = await workspaceOfRow(db, table, id);
  if (workspaceId === undefined) throw new Refused('not_found', `${NOUN[table]} ${id} does not exist.`);
  return workspaceId;
}

export async function requireInWorkspace(db: Executor, workspaceId: number, table: OwnedTable, id: number): Promise<number> {
  if (!(await isInWorkspace(db, table, id, workspaceId))) throw new Refused('not_found', `${NOUN[table]} ${id} does not exist.`);
  return id;
}
