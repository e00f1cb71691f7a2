import { sql, type Kysely } from 'kysely';
import type { HeaderRow, KeyValue, WorkflowBlock } from '../schema.js';
import { mapBlockCredentials, mapCredentialHeaders, mapCredentialValues } from '../../secrets/credential-headers.js';
import { isSealed, keyring, sealUnboundWith } from '../../secrets/keyring.js';

// Headers an operator typed whose name says they carry a credential (Authorization,
// X-Api-Key...: src/secrets/credential-headers.ts) are sealed like connector credentials:
// in connectors' constant headers, Custom URL blocks and delivery rows stored before this.
// Under the process's key, as 0005. There is no way down: the clear values are not kept.
export async function up(db: Kysely<unknown>): Promise<void> {
  const keys = keyring();
  const seal = (value: string) => (isSealed(value) ? value : sealUnboundWith(keys, value));

  const connectors = await sql<{ id: number; headers: KeyValue[] }>`SELECT id, headers FROM connectors`.execute(db);
  for (const { id, headers } of connectors.rows) {
    await sql`UPDATE connectors SET headers = ${JSON.stringify(mapCredentialValues(headers, seal))}::jsonb WHERE id = ${id}`.execute(db);
  }
  const workflows = await sql<{ id: number; block: WorkflowBlock }>`SELECT id, block FROM workflows`.execute(db);
  for (const { id, block } of workflows.rows) {
    await sql`UPDATE workflows SET block = ${JSON.stringify(mapBlockCredentials(block, seal))}::jsonb WHERE id = ${id}`.execute(db);
  }
  // Only the delivery rows with such a header are read (there may be many rows); the pattern is
  // the credential-name rule of src/secrets/credential-headers.ts as it stands for this migration.
  const deliveries = await sql<{ id: number; headers: HeaderRow[] }>`
    SELECT id, headers FROM deliveries
    WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(headers) AS h WHERE h->>'name' ~* 'auth|token|secret|key|passw|cookie|credential|signature|session')
  `.execute(db);
  for (const { id, headers } of deliveries.rows) {
    await sql`UPDATE deliveries SET headers = ${JSON.stringify(mapCredentialHeaders(headers, seal))}::jsonb WHERE id = ${id}`.execute(db);
  }
}
