import { sql, type Kysely } from 'kysely';
import type { ConnectorAuth, HeaderRow, KeyValue, WorkflowBlock } from '../schema.js';
import { mapAuthSecret } from '../../secrets/connector-auth.js';
import { mapBlockCredentials, mapCredentialHeaders, mapCredentialValues } from '../../secrets/credential-headers.js';
import { isSealed, keyring, openWith, sealWith, type SealedPlace } from '../../secrets/keyring.js';

// Sealed values are bound to their place (table, column, workspace, row) as AES-GCM associated
// data (the v2 format, src/secrets/keyring.ts): every value stored before, v1 and bound to
// nothing, is opened and sealed again for the place it is in, under the process's key (as 0005
// and 0007). A connector's signing secret and its previous one share the place "signing_secret";
// a delivery row's headers are bound to its webhook-id. Statements name the row's workspace
// too, so on Citus each goes to one shard. There is no way down: v1 values are not kept.
export async function up(db: Kysely<unknown>): Promise<void> {
  const keys = keyring();
  // A credential header stored in clear (one the credential-name rule did not match when 0007 ran) is sealed too.
  const resealAt = (place: SealedPlace) => (stored: string) => sealWith(keys, isSealed(stored) ? openWith(keys, stored, place) : stored, place);

  const connectors = await sql<{ id: number; workspace_id: number; auth: ConnectorAuth; headers: KeyValue[]; signing_secret: string; previous_signing_secret: string | null }>`
    SELECT id, workspace_id, auth, headers, signing_secret, previous_signing_secret FROM connectors`.execute(db);
  for (const row of connectors.rows) {
    const at = (column: string) => resealAt({ table: 'connectors', column, workspaceId: row.workspace_id, row: row.id });
    await sql`
      UPDATE connectors SET auth = ${JSON.stringify(mapAuthSecret(row.auth, at('auth')))}::jsonb,
        headers = ${JSON.stringify(mapCredentialValues(row.headers, at('headers')))}::jsonb,
        signing_secret = ${at('signing_secret')(row.signing_secret)},
        previous_signing_secret = ${row.previous_signing_secret === null ? null : at('signing_secret')(row.previous_signing_secret)}
      WHERE workspace_id = ${row.workspace_id} AND id = ${row.id}`.execute(db);
  }

  const workflows = await sql<{ id: number; workspace_id: number; block: WorkflowBlock; signing_secret: string }>`
    SELECT id, workspace_id, block, signing_secret FROM workflows`.execute(db);
  for (const row of workflows.rows) {
    const at = (column: string) => resealAt({ table: 'workflows', column, workspaceId: row.workspace_id, row: row.id });
    await sql`
      UPDATE workflows SET block = ${JSON.stringify(mapBlockCredentials(row.block, at('block')))}::jsonb, signing_secret = ${at('signing_secret')(row.signing_secret)}
      WHERE workspace_id = ${row.workspace_id} AND id = ${row.id}`.execute(db);
  }

  // Only the delivery rows holding a v1 value are read (there may be many rows).
  const deliveries = await sql<{ id: number; workspace_id: number; message_id: string; headers: HeaderRow[] }>`
    SELECT id, workspace_id, message_id, headers FROM deliveries WHERE headers::text LIKE '%"v1:%'`.execute(db);
  for (const row of deliveries.rows) {
    const at = resealAt({ table: 'deliveries', column: 'headers', workspaceId: row.workspace_id, row: row.message_id });
    await sql`UPDATE deliveries SET headers = ${JSON.stringify(mapCredentialHeaders(row.headers, at))}::jsonb WHERE workspace_id = ${row.workspace_id} AND id = ${row.id}`.execute(
      db,
    );
  }
}
