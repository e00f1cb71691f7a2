import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';
import type { ConnectorAuth, ConnectorRow, FieldMapping, KeyValue, WebhookMethod, BodyFormat } from '../db/schema.js';
import { mapAuthSecret } from '../secrets/connector-auth.js';
import { mapCredentialValues } from '../secrets/credential-headers.js';
import { openSecret, sealSecret } from '../secrets/keyring.js';

// Credentials and signing secrets are sealed on the way in and opened on the way out: the
// table holds ciphertext only, callers see the connector as configured.

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

/** The stored row with its secrets opened. */
export function openConnector(row: ConnectorRow): ConnectorRow {
  return {
    ...row,
    auth: mapAuthSecret(row.auth, openSecret),
    headers: mapCredentialValues(row.headers, openSecret),
    signing_secret: openSecret(row.signing_secret),
    previous_signing_secret: row.previous_signing_secret === null ? null : openSecret(row.previous_signing_secret),
  };
}

export async function insertConnector(db: Executor, connector: NewConnector): Promise<ConnectorRow> {
  return openConnector(
    await db
      .insertInto('connectors')
      .values({
        ...connector,
        signing_secret: sealSecret(connector.signing_secret),
        auth: jsonParameter(mapAuthSecret(connector.auth, sealSecret)),
        mapping: jsonParameter(connector.mapping),
        fields: jsonParameter(connector.fields),
        headers: jsonParameter(mapCredentialValues(connector.headers, sealSecret)),
      })
      .returningAll()
      .executeTakeFirstOrThrow(),
  );
}

/**
 * A workspace's connectors by id, whatever their state (callers report why one is unusable): a
 * connector of another workspace reads as missing.
 */
export async function findConnectors(db: Executor, ids: readonly number[], workspaceId: number): Promise<Map<number, ConnectorRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('connectors')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, openConnector(row)]));
}

/** Connectors by id in any workspace: for the operator's commands (the CLI), which name ids alone. */
export async function findConnectorsAcrossWorkspaces(db: Executor, ids: readonly number[]): Promise<Map<number, ConnectorRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('connectors')
    .selectAll()
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, openConnector(row)]));
}

/** A workspace's connectors that are not deleted, in creation order. */
export async function listConnectors(db: Executor, workspaceId: number): Promise<ConnectorRow[]> {
  return db
    .selectFrom('connectors')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute()
    .then((rows) => rows.map(openConnector));
}

export async function findAutoPushConnectors(db: Executor, workspaceIds: readonly number[]): Promise<ConnectorRow[]> {
  if (workspaceIds.length === 0) return [];
  return db
    .selectFrom('connectors')
    .selectAll()
    .where('workspace_id', 'in', [...new Set(workspaceIds)])
    .where('auto_push', '=', true)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute()
    .then((rows) => rows.map(openConnector));
}

/** Marks the connector deleted, auto-push off; undefined when there is no such connector not yet deleted. */
export async function softDeleteConnector(db: Executor, id: number): Promise<{ id: number } | undefined> {
  return db.updateTable('connectors').set({ deleted_at: new Date(), auto_push: false }).where('id', '=', id).where('deleted_at', 'is', null).returning('id').executeTakeFirst();
}

export async function setAutoPush(db: Executor, id: number, autoPush: boolean): Promise<ConnectorRow | undefined> {
  const row = await db.updateTable('connectors').set({ auto_push: autoPush }).where('id', '=', id).where('deleted_at', 'is', null).returningAll().executeTakeFirst();
  return row && openConnector(row);
}

/** Seals every connector's secrets again with the current key (after a key change); returns how many. */
export async function resealConnectors(db: Executor): Promise<number> {
  const rows = await db.selectFrom('connectors').selectAll().orderBy('id').execute();
  for (const row of rows.map(openConnector)) {
    await db
      .updateTable('connectors')
      .set({
        auth: jsonParameter(mapAuthSecret(row.auth, sealSecret)),
        headers: jsonParameter(mapCredentialValues(row.headers, sealSecret)),
        signing_secret: sealSecret(row.signing_secret),
        previous_signing_secret: row.previous_signing_secret === null ? null : sealSecret(row.previous_signing_secret),
      })
      .where('id', '=', row.id)
      .execute();
  }
  return rows.length;
}

/** A new signing secret; the one it replaces keeps signing until `overlapEnds`. */
export async function replaceSigningSecret(db: Executor, id: number, secret: string, overlapEnds: Date): Promise<ConnectorRow | undefined> {
  const row = await db
    .updateTable('connectors')
    .set((eb) => ({ previous_signing_secret: eb.ref('signing_secret'), previous_secret_expires_at: overlapEnds, signing_secret: sealSecret(secret) }))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return row && openConnector(row);
}
