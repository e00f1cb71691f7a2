import type { Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { isInWorkspace, type OwnedTable } from './owned-repository.js';

// The services the CLI calls take bare ids: right for an operator who may touch every
// workspace, a hole behind a workspace's session. An edge acting for one workspace checks an
// id with this first; another workspace's row gets the very refusal of a missing one. Such an
// edge then passes its workspace on to the service, so every statement names it (one node on
// Citus); the CLI, naming only ids, leaves it out.

const NOUN: Record<OwnedTable, string> = {
  api_keys: 'API key',
  connectors: 'Connector',
  workflows: 'Workflow',
  deliveries: 'Delivery',
  tags: 'Tag',
  users: 'User',
  leads: 'Lead',
};

export async function requireInWorkspace(db: Executor, workspaceId: number, table: OwnedTable, id: number): Promise<number> {
  if (!(await isInWorkspace(db, table, id, workspaceId))) throw new Refused('not_found', `${NOUN[table]} ${id} does not exist.`);
  return id;
}
