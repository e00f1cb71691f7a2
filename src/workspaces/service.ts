import { scopeValues } from '../../generated/api.js';
import { createApiKey } from '../api-keys/service.js';
import { recordAudit, type Actor } from '../audit/service.js';
import type { Db, Executor } from '../db/connect.js';
import { Refused } from '../refused.js';
import { addMember } from '../users/service.js';
import { findWorkspace, insertWorkspace } from './repository.js';

/** The workspace with this id; refused (not_found) when there is none. */
export async function requireWorkspace(db: Executor, id: number) {
  const workspace = await findWorkspace(db, id);
  if (!workspace) throw new Refused('not_found', `Workspace ${id} does not exist.`);
  return workspace;
}

/** `workspace create`: the new workspace's first audit entry says who made it. */
export function createWorkspace(db: Db, actor: Actor, name: string) {
  return db.transaction().execute(async (trx) => {
    const workspace = await insertWorkspace(trx, name);
    await recordAudit(trx, { actor, workspaceId: workspace.id, action: 'workspace.created', target: { type: 'workspace', id: workspace.id } });
    return workspace;
  });
}

/** A demo workspace with an admin user and a key holding every scope, in one transaction. */
export function createDemoWorkspace(db: Db, actor: Actor) {
  return db.transaction().execute(async (trx) => {
    const workspace = await insertWorkspace(trx, 'Demo workspace');
    await recordAudit(trx, { actor, workspaceId: workspace.id, action: 'workspace.created', target: { type: 'workspace', id: workspace.id } });
    const user = await addMember(trx, actor, workspace.id, `admin+${workspace.id}@demo.example`, 'admin');
    const key = await createApiKey(trx, actor, { workspaceId: workspace.id, userId: user.id, name: 'Demo key', scopes: [...scopeValues], expiresAt: null });
    return { workspace, user, key };
  });
}
