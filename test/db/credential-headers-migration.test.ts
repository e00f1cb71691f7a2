import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { findConnectorsAcrossWorkspaces } from '../../src/connectors/repository.js';
import type { Db } from '../../src/db/connect.js';
import { createMigrator } from '../../src/db/migrate.js';
import { findDelivery } from '../../src/deliveries/repository.js';
import { keyring, sealUnboundWith } from '../../src/secrets/keyring.js';
import { findWorkflowsAcrossWorkspaces } from '../../src/workflows/repository.js';
import { migrationTestDatabase } from '../support/migration-database.js';

// Migration 0007 on credential headers stored in clear before it (signing secrets already sealed by 0005).

const database = migrationTestDatabase('headers', '0006_delivery_tools');
let db: Db;
beforeAll(() => {
  db = database.db();
});

describe('0007_seal_credential_headers', () => {
  it('seals credential-named header values of connectors, Custom URL blocks and delivery rows; other headers stay as they are', async () => {
    const {
      rows: [workspace],
    } = await sql<{ id: number }>`INSERT INTO workspaces (name) VALUES ('Old') RETURNING id`.execute(db);
    const {
      rows: [connector],
    } = await sql<{ id: number }>`
      INSERT INTO connectors (workspace_id, url, method, format, auth, signing_secret, headers)
      VALUES (${workspace!.id}, 'https://crm.example/hook', 'POST', 'json', '{"type":"none"}', ${sealUnboundWith(keyring(), 'whsec_c0nn')},
        ${JSON.stringify([
          { key: 'X-Api-Key', value: 'ck_old_clear' },
          { key: 'X-Team', value: 'sales' },
        ])}::jsonb) RETURNING id`.execute(db);
    const block = { endpoint: 'url', url: 'https://x.example', method: 'POST', format: 'json', headers: [{ key: 'Authorization', value: 'Bearer bk_old_clear' }], fields: [] };
    const {
      rows: [workflow],
    } = await sql<{ id: number }>`
      INSERT INTO workflows (workspace_id, trigger, block, signing_secret) VALUES (${workspace!.id}, 'lead_created', ${JSON.stringify(block)}::jsonb, ${sealUnboundWith(keyring(), 'whsec_w0rk')})
      RETURNING id`.execute(db);
    const headers = [
      { name: 'User-Agent', value: 'LeadIntake-Webhooks/1.0' },
      { name: 'Authorization', value: 'Bearer bk_old_clear' },
    ];
    const {
      rows: [delivery],
    } = await sql<{ id: number }>`
      INSERT INTO deliveries (workspace_id, event, sender, trigger, workflow_id, message_id, url, method, headers, max_attempts)
      VALUES (${workspace!.id}, 'workflow', 'custom_url', 'lead_created', ${workflow!.id}, 'msg_old', 'https://x.example', 'POST', ${JSON.stringify(headers)}::jsonb, 3)
      RETURNING id`.execute(db);

    const { results, error } = await createMigrator(db).migrateTo('0007_seal_credential_headers');
    expect(error).toBeUndefined();
    expect(results?.map((result) => [result.migrationName, result.status])).toEqual([['0007_seal_credential_headers', 'Success']]);

    const stored = await sql<{ value: string }>`
      SELECT headers::text AS value FROM connectors UNION ALL SELECT block::text FROM workflows UNION ALL SELECT headers::text FROM deliveries`.execute(db);
    expect(stored.rows.filter((row) => /_old_clear/.test(row.value))).toEqual([]);
    expect(stored.rows[0]!.value).toContain('"sales"');

    expect((await findConnectorsAcrossWorkspaces(db as never, [connector!.id])).get(connector!.id)?.headers).toEqual([
      { key: 'X-Api-Key', value: 'ck_old_clear' },
      { key: 'X-Team', value: 'sales' },
    ]);
    expect((await findWorkflowsAcrossWorkspaces(db as never, [workflow!.id])).get(workflow!.id)?.block).toEqual(block);
    expect((await findDelivery(db as never, delivery!.id, workspace!.id))?.headers).toEqual(headers);
  });
});
