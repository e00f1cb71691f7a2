import type { Executor } from '../db/connect.js';
import type { ConnectorAuth, ConnectorRow, FieldMapping, KeyValue, WebhookMethod, BodyFormat } from '../db/schema.js';

export interface NewConnector {
  workspace_id: number;
  url: string;
  method: WebhookMethod;
  format: BodyFormat;
  auth: ConnectorAuth;
  mapping: FieldMapping[];
  fields: KeyValue[];
  headers: KeyValue[];
  auto_push: boolean;
  signing_secret: string;
}

export async function insertConnector(db: Executor, connector: NewConnector): Promise<ConnectorRow> {
  return db.insertInto('connectors').values({
    ...connector,
    auth: JSON.stringify(connector.auth),
    mapping: JSON.stringify(connector.mapping),
    fields: JSON.stringify(connector.fields),
    headers: JSON.stringify(connector.headers),
  }).returningAll().executeTakeFirstOrThrow();
}

/** Any connector by id, whatever its workspace or state: callers report why it is unusable. */
export async function findConnectors(db: Executor, ids: readonly number[]): Promise<Map<number, ConnectorRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('connectors').selectAll().where('id', 'in', [...new Set(ids)]).execute();
  return new Map(rows.map((row) => [row.id, row]));
}

/** A workspace's connectors that are not deleted, in creation order. */
export async function listConnectors(db: Executor, workspaceId: number): Promise<ConnectorRow[]> {
  return db.selectFrom('connectors').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null).orderBy('id').execute();
}

export async function findAutoPushConnectors(db: Executor, workspaceIds: readonly number[]): Promise<ConnectorRow[]> {
  if (workspaceIds.length === 0) return [];
  return db.selectFrom('connectors').selectAll()
    .where('workspace_id', 'in', [...new Set(workspaceIds)]).where('auto_push', '=', true).where('deleted_at', 'is', null)
    .orderBy('id').execute();
}

export async function softDeleteConnector(db: Executor, id: number): Promise<{ id: number } | undefined> {
  return db.updateTable('connectors').set({ deleted_at: new Date(), auto_push: false })
    .where('id', '=', id).where('deleted_at', 'is', null).returning('id').executeTakeFirst();
}

export async function setAutoPush(db: Executor, id: number, autoPush: boolean): Promise<ConnectorRow | undefined> {
  return db.updateTable('connectors').set({ auto_push: autoPush })
    .where('id', '=', id).where('deleted_at', 'is', null).returningAll().executeTakeFirst();
}
