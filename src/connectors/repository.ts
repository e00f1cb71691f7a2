import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';
import type { ConnectorAuth, ConnectorRow, FieldMapping, KeyValue, WebhookMethod, BodyFormat } from '../db/schema.js';
import { mapAuthSecret } from '../secrets/connector-auth.js';
import { mapCredentialValues } from '../secrets/credential-headers.js';
import { openedOrEmpty, secretsAt } from '../secrets/keyring.js';
import { insertWithIdentity, nextIdentity } from '../db/identity.js';

// Credentials and signing secrets are sealed on the way in and opened on the way out: the
// table holds ciphertext only, callers see the connector as configured. Each value is sealed
// for its connector (workspace and id) and its column; the signing secret and the previous
// one share one place, "the signing secret of connector N", so a rotation moves the current
// value to previous_signing_secret in SQL as it is.

type SecretColumn = 'signing_secret' | 'auth' | 'headers';
const secretsOf = (connector: { id: number; workspace_id: number }, column: SecretColumn) =>
  secretsAt({ table: 'connectors', column, workspaceId: connector.workspace_id, row: connector.id });

/** The connector's secrets sealed for it (`opened` holds them in clear). */
function sealedSecrets(opened: Pick<ConnectorRow, 'id' | 'workspace_id' | 'auth' | 'headers' | 'signing_secret' | 'previous_signing_secret'>) {
  const signing = secretsOf(opened, 'signing_secret');
  return {
    auth: jsonParameter(mapAuthSecret(opened.auth, secretsOf(opened, 'auth').seal)),
    headers: jsonParameter(mapCredentialValues(opened.headers, secretsOf(opened, 'headers').seal)),
    signing_secret: signing.seal(opened.signing_secret),
    previous_signing_secret: opened.previous_signing_secret === null ? null : signing.seal(opened.previous_signing_secret),
  };
}

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

/** The stored row with its secrets opened; `leniently`: a value that does not open reads as empty (openedOrEmpty). */
export function openConnector(row: ConnectorRow, leniently = false): ConnectorRow {
  const opener = (column: SecretColumn) => (leniently ? openedOrEmpty(secretsOf(row, column).open) : secretsOf(row, column).open);
  return {
    ...row,
    auth: mapAuthSecret(row.auth, opener('auth')),
    headers: mapCredentialValues(row.headers, opener('headers')),
    signing_secret: opener('signing_secret')(row.signing_secret),
    previous_signing_secret: row.previous_signing_secret === null ? null : opener('signing_secret')(row.previous_signing_secret),
  };
}

/** Inserts the connector under an id taken first, as its secrets are sealed for it. */
export async function insertConnector(db: Executor, connector: NewConnector): Promise<ConnectorRow> {
  const id = await nextIdentity(db, 'connectors');
  return openConnector(
    await insertWithIdentity(db, 'connectors', {
      ...connector,
      id,
      ...sealedSecrets({ ...connector, id, previous_signing_secret: null }),
      mapping: jsonParameter(connector.mapping),
      fields: jsonParameter(connector.fields),
    }),
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

/** A workspace's connectors that are not deleted, in creation order, to be shown (secrets opened leniently). */
export async function listConnectors(db: Executor, workspaceId: number): Promise<ConnectorRow[]> {
  return db
    .selectFrom('connectors')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute()
    .then((rows) => rows.map((row) => openConnector(row, true)));
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
    .then((rows) => rows.map((row) => openConnector(row)));
}

/** Marks the connector deleted, auto-push off; undefined when there is no such connector not yet deleted. */
export async function softDeleteConnector(db: Executor, id: number): Promise<{ id: number; workspace_id: number } | undefined> {
  return db
    .updateTable('connectors')
    .set({ deleted_at: new Date(), auto_push: false })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(['id', 'workspace_id'])
    .executeTakeFirst();
}

export async function setAutoPush(db: Executor, id: number, autoPush: boolean): Promise<ConnectorRow | undefined> {
  const row = await db.updateTable('connectors').set({ auto_push: autoPush }).where('id', '=', id).where('deleted_at', 'is', null).returningAll().executeTakeFirst();
  return row && openConnector(row);
}

/** Seals every connector's secrets again with the current key, for their place (after a key change, or v1 values); returns how many. */
export async function resealConnectors(db: Executor): Promise<number> {
  const rows = await db.selectFrom('connectors').selectAll().orderBy('id').execute();
  for (const row of rows.map((row) => openConnector(row))) {
    await db.updateTable('connectors').set(sealedSecrets(row)).where('workspace_id', '=', row.workspace_id).where('id', '=', row.id).execute();
  }
  return rows.length;
}

/** A new signing secret; the one it replaces keeps signing until `overlapEnds`. */
export async function replaceSigningSecret(db: Executor, id: number, secret: string, overlapEnds: Date): Promise<ConnectorRow | undefined> {
  // Its workspace first, the new secret being sealed for the connector (the statement of findConnectors: on Citus, as rare as the rotation).
  const current = await db.selectFrom('connectors').selectAll().where('id', 'in', [id]).executeTakeFirst();
  if (!current) return undefined;
  const row = await db
    .updateTable('connectors')
    .set((eb) => ({
      previous_signing_secret: eb.ref('signing_secret'),
      previous_secret_expires_at: overlapEnds,
      signing_secret: secretsOf(current, 'signing_secret').seal(secret),
    }))
    .where('workspace_id', '=', current.workspace_id)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return row && openConnector(row);
}
