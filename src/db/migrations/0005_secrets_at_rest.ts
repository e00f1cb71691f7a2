import { sql, type Kysely } from 'kysely';
import type { ConnectorAuth } from '../schema.js';
import { mapAuthSecret } from '../../secrets/connector-auth.js';
import { isSealed, keyring, sealUnboundWith } from '../../secrets/keyring.js';

// Secrets at rest: connector credentials and signing secrets (connectors, workflows) become
// AES-256-GCM ciphertext under the process's key (SECRETS_KEY, or the checkout's key file,
// resolved as every process does). Delivery rows lose what they held in clear: the auth
// header (added at send time now) and the signing secret (read from the connector or the
// workflow at send time). Connectors get the columns a secret rotation needs.
// There is no way down: the clear values are not kept anywhere.
export async function up(db: Kysely<unknown>): Promise<void> {
  const keys = keyring();
  const seal = (value: string) => (isSealed(value) ? value : sealUnboundWith(keys, value));

  await sql`
    ALTER TABLE connectors ADD COLUMN previous_signing_secret text, ADD COLUMN previous_secret_expires_at timestamptz;
    -- The auth header of a connector's delivery was its auth's header name, or Authorization.
    UPDATE deliveries AS d SET headers = coalesce((
      SELECT jsonb_agg(h.value ORDER BY h.position)
      FROM jsonb_array_elements(d.headers) WITH ORDINALITY AS h(value, position)
      WHERE lower(h.value->>'name') <> lower(CASE c.auth->>'type' WHEN 'header' THEN trim(c.auth->>'name') ELSE 'Authorization' END)
    ), '[]'::jsonb)
    FROM connectors AS c
    WHERE c.id = d.connector_id AND c.auth->>'type' IN ('bearer', 'basic', 'header');
    ALTER TABLE deliveries DROP COLUMN signing_secret;
  `.execute(db);

  const connectors = await sql<{ id: number; auth: ConnectorAuth; signing_secret: string }>`SELECT id, auth, signing_secret FROM connectors`.execute(db);
  for (const { id, auth, signing_secret } of connectors.rows) {
    await sql`UPDATE connectors SET auth = ${JSON.stringify(mapAuthSecret(auth, seal))}::jsonb, signing_secret = ${seal(signing_secret)} WHERE id = ${id}`.execute(db);
  }
  const workflows = await sql<{ id: number; signing_secret: string }>`SELECT id, signing_secret FROM workflows`.execute(db);
  for (const { id, signing_secret } of workflows.rows) {
    await sql`UPDATE workflows SET signing_secret = ${seal(signing_secret)} WHERE id = ${id}`.execute(db);
  }
}
