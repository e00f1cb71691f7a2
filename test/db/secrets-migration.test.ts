import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { Db } from '../../src/db/connect.js';
import { createMigrator } from '../../src/db/migrate.js';
import { findConnectorsAcrossWorkspaces } from '../../src/connectors/repository.js';
import { findWorkflowsAcrossWorkspaces } from '../../src/workflows/repository.js';
import { migrationTestDatabase } from '../support/migration-database.js';

// Migration 0005 on connectors, workflows and deliveries stored in clear before it.

const database = migrationTestDatabase('secrets', '0004_notify_key_creation');
let db: Db;
beforeAll(() => {
  db = database.db();
});

describe('0005_secrets_at_rest', () => {
  it('seals the clear credentials and signing secrets, and strips the auth header and secret from delivery rows', async () => {
    const {
      rows: [workspace],
    } = await sql<{ id: number }>`INSERT INTO workspaces (name) VALUES ('Old') RETURNING id`.execute(db);
    const connector = async (auth: object, secret: string) =>
      (
        await sql<{ id: number }>`
      INSERT INTO connectors (workspace_id, url, method, format, auth, signing_secret)
      VALUES (${workspace!.id}, 'https://crm.example/hook', 'POST', 'json', ${JSON.stringify(auth)}::jsonb, ${secret}) RETURNING id`.execute(db)
      ).rows[0]!.id;
    const bearer = await connector({ type: 'bearer', token: 'tok_old_clear' }, 'whsec_b3ar3r');
    const header = await connector({ type: 'header', name: 'X-Api-Key', value: 'hv_old_clear' }, 'whsec_h3ad3r');
    const none = await connector({ type: 'none' }, 'whsec_n0n3');
    const {
      rows: [workflow],
    } = await sql<{ id: number }>`
      INSERT INTO workflows (workspace_id, trigger, block, signing_secret)
      VALUES (${workspace!.id}, 'lead_created', '{"endpoint":"url","url":"https://x.example","method":"POST","format":"json","headers":[],"fields":[]}', 'whsec_w0rkfl0w')
      RETURNING id`.execute(db);
    const delivery = async (connectorId: number | null, headers: object[], secret: string) =>
      sql`
      INSERT INTO deliveries (workspace_id, event, sender, trigger, connector_id, workflow_id, lead_id, message_id, url, method, headers, signing_secret, max_attempts)
      VALUES (${workspace!.id}, 'lead', ${connectorId === null ? 'custom_url' : 'connector_push'}, 'push', ${connectorId}, ${connectorId === null ? workflow!.id : null}, null,
        ${`msg_${randomBytes(8).toString('hex')}`}, 'https://crm.example/hook', 'POST', ${JSON.stringify(headers)}::jsonb, ${secret}, 3)`.execute(db);
    const userAgent = { name: 'User-Agent', value: 'LeadIntake-Webhooks/1.0' };
    await delivery(bearer, [userAgent, { name: 'X-Const', value: 'kept' }, { name: 'Authorization', value: 'Bearer tok_old_clear' }], 'whsec_b3ar3r');
    await delivery(header, [userAgent, { name: 'X-Api-Key', value: 'hv_old_clear' }], 'whsec_h3ad3r');
    await delivery(none, [userAgent, { name: 'Authorization', value: 'constant, not a credential' }], 'whsec_n0n3');
    await delivery(null, [userAgent], 'whsec_w0rkfl0w');

    const { results, error } = await createMigrator(db).migrateTo('0005_secrets_at_rest');
    expect(error).toBeUndefined();
    expect(results?.map((result) => [result.migrationName, result.status])).toEqual([['0005_secrets_at_rest', 'Success']]);

    const stored = await sql<{ auth: Record<string, string>; signing_secret: string }>`SELECT auth, signing_secret FROM connectors ORDER BY id`.execute(db);
    expect(stored.rows.map((row) => [row.auth.token ?? row.auth.value ?? null, row.signing_secret])).toEqual([
      [expect.stringMatching(/^v1:/), expect.stringMatching(/^v1:/)],
      [expect.stringMatching(/^v1:/), expect.stringMatching(/^v1:/)],
      [null, expect.stringMatching(/^v1:/)],
    ]);
    const opened = await findConnectorsAcrossWorkspaces(db as never, [bearer, header, none]);
    expect(opened.get(bearer)).toMatchObject({ auth: { type: 'bearer', token: 'tok_old_clear' }, signing_secret: 'whsec_b3ar3r', previous_signing_secret: null });
    expect(opened.get(header)).toMatchObject({ auth: { type: 'header', name: 'X-Api-Key', value: 'hv_old_clear' }, signing_secret: 'whsec_h3ad3r' });
    expect((await findWorkflowsAcrossWorkspaces(db as never, [workflow!.id])).get(workflow!.id)?.signing_secret).toBe('whsec_w0rkfl0w');

    const deliveries = await sql<{ headers: Array<{ name: string }> }>`SELECT headers FROM deliveries ORDER BY id`.execute(db);
    expect(deliveries.rows.map((row) => row.headers.map((h) => h.name))).toEqual([['User-Agent', 'X-Const'], ['User-Agent'], ['User-Agent', 'Authorization'], ['User-Agent']]);
    const { rows: columns } = await sql`SELECT 1 FROM information_schema.columns WHERE table_name = 'deliveries' AND column_name = 'signing_secret'`.execute(db);
    expect(columns).toHaveLength(0);
  });
});
