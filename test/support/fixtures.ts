import { scopeValues, type Scope } from '../../generated/api.js';
import { createApiKey } from '../../src/api-keys/service.js';
import type { Db } from '../../src/db/connect.js';
import { insertUser } from '../../src/users/repository.js';
import { insertWorkspace } from '../../src/workspaces/repository.js';
import { knownToRunningApps } from './app.js';
import { OPERATOR } from '../../src/audit/service.js';

const ALL_SCOPES: Scope[] = [...scopeValues];

export interface Tenant {
  workspaceId: number;
  userId: number;
  keyId: number;
  token: string;
  prefix: string;
  auth: { Authorization: string };
}

export interface TenantOptions {
  scopes?: Scope[];
  name?: string;
  expiresAt?: string | null;
}

/** A workspace with an admin user and one API key (all scopes unless told otherwise). */
export async function createTenant(db: Db, options: TenantOptions = {}): Promise<Tenant> {
  const workspace = await insertWorkspace(db, options.name ?? 'Acme Sales');
  const user = await insertUser(db, { workspace_id: workspace.id, email: `admin${workspace.id}@acme.test`, role: 'admin' });
  const key = await createApiKey(db, OPERATOR, {
    workspaceId: workspace.id,
    userId: user.id,
    name: 'Test key',
    scopes: options.scopes ?? ALL_SCOPES,
    expiresAt: options.expiresAt ?? null,
  });
  await knownToRunningApps(db, key.prefix);
  return { workspaceId: workspace.id, userId: user.id, keyId: key.id, token: key.token, prefix: key.prefix, auth: { Authorization: `Bearer ${key.token}` } };
}

/** Another key in the same workspace. */
export async function addKey(db: Db, tenant: Tenant, scopes: Scope[] = ALL_SCOPES): Promise<Tenant> {
  const key = await createApiKey(db, OPERATOR, { workspaceId: tenant.workspaceId, userId: tenant.userId, name: 'Second key', scopes, expiresAt: null });
  await knownToRunningApps(db, key.prefix);
  return { ...tenant, keyId: key.id, token: key.token, prefix: key.prefix, auth: { Authorization: `Bearer ${key.token}` } };
}
