import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { findConnectors } from '../../src/connectors/repository.js';
import type { Db } from '../../src/db/connect.js';
import { createMigrator } from '../../src/db/migrate.js';
import { findDelivery } from '../../src/deliveries/repository.js';
import { keyring, sealUnboundWith } from '../../src/secrets/keyring.js';
import { findWorkflows } from '../../src/workflows/repository.js';
import { migrationTestDatabase } from '../support/migration-database.js';

// Migration 0021 on values sealed as v1 (bound to no place) before it.

const database = migrationTestDatabase('bind', '0020_lead_imports');
let db: Db;
beforeAll(() => {
  db = database.db();
});

const v1 = (plain: string) => sealUnboundWith(keyring(), plain);

describe('0021_bind_sealed_secrets', () => {
  it('seals every v1 value again as v2, bound to its place; the values open as before, and a moved one no longer does', async () => {
    const {
      rows: [workspace],
    } = await sql<{ id: number }>`INSERT INTO workspaces (name) VALUES ('Old') RETURNING id`.execute(db);
    const connectorRow = async (secret: string) =>
      (
        await sql<{ id: number }>`
      INSERT INTO connectors (workspace_id, url, method, format, auth, signing_secret, previous_signing_secret, headers)
      VALUES (${workspace!.id}, 'https://crm.example/hook', 'POST', 'json', ${JSON.stringify({ type: 'bearer', token: v1('tok_old') })}::jsonb, ${v1(secret)}, ${v1('whsec_prev')},
        ${JSON.stringify([
          { key: 'X-Api-Key', value: v1('ck_old') },
          { key: 'X-Team', value: 'sales' },
        ])}::jsonb) RETURNING id`.execute(db)
      ).rows[0]!.id;
    const [first, second] = [await connectorRow('whsec_first'), await connectorRow('whsec_second')];
    const block = { endpoint: 'url', url: 'https://x.example', method: 'POST', format: 'json', headers: [{ key: 'Authorization', value: v1('Bearer bk_old') }], fields: [] };
    const {
      rows: [workflow],
    } = await sql<{ id: number }>`
      INSERT INTO workflows (workspace_id, trigger, block, signing_secret) VALUES (${workspace!.id}, 'lead_created', ${JSON.stringify(block)}::jsonb, ${v1('whsec_w0rk')})
      RETURNING id`.execute(db);
    const {
      rows: [delivery],
    } = await sql<{ id: number }>`
      INSERT INTO deliveries (workspace_id, event, sender, trigger, workflow_id, message_id, url, method, headers, max_attempts)
      VALUES (${workspace!.id}, 'workflow', 'custom_url', 'lead_created', ${workflow!.id}, 'msg_old', 'https://x.example', 'POST',
        ${JSON.stringify([{ name: 'Authorization', value: v1('Bearer bk_old') }])}::jsonb, 3)
      RETURNING id`.execute(db);

    const { results, error } = await createMigrator(db).migrateTo('0021_bind_sealed_secrets');
    expect(error).toBeUndefined();
    expect(results?.map((result) => [result.migrationName, result.status])).toEqual([['0021_bind_sealed_secrets', 'Success']]);

    const stored = await sql<{ value: string }>`
      SELECT concat_ws(' ', auth::text, headers::text, signing_secret, previous_signing_secret) AS value FROM connectors
      UNION ALL SELECT concat_ws(' ', block::text, signing_secret) FROM workflows UNION ALL SELECT headers::text FROM deliveries`.execute(db);
    // A sealed value starts a JSON string or a column; "v1:" may also occur inside its random base64.
    const sealedAs = (version: string) => new RegExp(`(^|[ "])${version}:`);
    expect(stored.rows.filter((row) => sealedAs('v1').test(row.value))).toEqual([]);
    expect(stored.rows.every((row) => sealedAs('v2').test(row.value))).toBe(true);

    const connector = (await findConnectors(db as never, [first], workspace!.id)).get(first)!;
    expect([connector.auth, connector.headers, connector.signing_secret, connector.previous_signing_secret]).toEqual([
      { type: 'bearer', token: 'tok_old' },
      [
        { key: 'X-Api-Key', value: 'ck_old' },
        { key: 'X-Team', value: 'sales' },
      ],
      'whsec_first',
      'whsec_prev',
    ]);
    const opened = (await findWorkflows(db as never, [workflow!.id], workspace!.id)).get(workflow!.id)!;
    expect([opened.block, opened.signing_secret]).toEqual([{ ...block, headers: [{ key: 'Authorization', value: 'Bearer bk_old' }] }, 'whsec_w0rk']);
    expect((await findDelivery(db as never, delivery!.id, workspace!.id))?.headers).toEqual([{ name: 'Authorization', value: 'Bearer bk_old' }]);

    // Bound now: the first connector's signing secret copied onto the second no longer opens there.
    await sql`UPDATE connectors SET signing_secret = (SELECT signing_secret FROM connectors WHERE id = ${first}) WHERE id = ${second}`.execute(db);
    await expect(findConnectors(db as never, [second], workspace!.id)).rejects.toThrow(/connectors\.signing_secret of row \d+ .*does not open/);
  });
});
