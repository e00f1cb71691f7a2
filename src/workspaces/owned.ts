import type { Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { workspaceOf, type OwnedTable } from './owned-repository.js';

// The services the CLI calls take bare ids: right for an operator who may touch every
// workspace, a hole behind a workspace's session. An edge acting for one workspace checks an
// id with this first; another workspace's row gets the very refusal of a missing one.

const NOUN: Record<OwnedTable, string> = {
  api_keys: 'API key', connectors: 'Connector', workflows: 'Workflow', deliveries: 'Delivery', tags: 'Tag', users: 'User', leads: 'Lead',
};

export async function requireInWorkspace(db: Executor, workspaceId: number, table: OwnedTable, id: number): Promise<number> {
  if (await workspaceOf(db, table, id) !== workspaceId) throw new Refused('not_found', `${NOUN[table]} ${id} does not exist.`);
  return id;
}
