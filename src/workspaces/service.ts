import { scopeValues } from '../../generated/api.js';
import { createApiKey } from '../api-keys/service.js';
import type { Db, Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { insertUser } from '../users/repository.js';
import { findWorkspace, insertWorkspace } from './repository.js';

/** The workspace with this id; refused (not_found) when there is none. */
export async function requireWorkspace(db: Executor, id: number) {
  const workspace = await findWorkspace(db, id);
  if (!workspace) throw new Refused('not_found', `Workspace ${id} does not exist.`);
  return workspace;
}

/** A demo workspace with an admin user and a key holding every scope, in one transaction. */
export function createDemoWorkspace(db: Db) {
  return db.transaction().execute(async (trx) => {
    const workspace = await insertWorkspace(trx, 'Demo workspace');
    const user = await insertUser(trx, { workspace_id: workspace.id, email: `admin+${workspace.id}@demo.example`, role: 'admin' });
    const key = await createApiKey(trx, { workspaceId: workspace.id, userId: user.id, name: 'Demo key', scopes: [...scopeValues], expiresAt: null });
    return { workspace, user, key };
  });
}
