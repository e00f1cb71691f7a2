import { randomBytes, randomInt } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { generateToken } from '../../src/api-keys/tokens.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { cliJson } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { readTestEnvironment } from '../support/env.js';
import { StatementWatch } from '../support/statements.js';

// On Citus api_keys has no trigger (the service's statements notify): keys inserted with plain
// SQL, and switching the trigger off, are what these two tests need (docs/operations.md, "Citus").
const itWithKeyTrigger = readTestEnvironment().citus ? it.skip : it;
if (readTestEnvironment().citus)
  process.stderr.write(
    '\nSKIPPED two tests of test/api-keys/made-up-api-keys.test.ts on Citus: they insert keys with plain SQL and switch the api_keys trigger, which Citus does not have.\n',
  );

// Issue 16: a well-formed token whose prefix belongs to no key is refused without a query,
// through the in-memory view of existing prefixes (src/api-keys/prefix-view.ts).

const bed = testBed();
let t: TestApp;
let watch: StatementWatch;
let tenant: Tenant;
beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  watch = await StatementWatch.open(t.databaseUrl);
  bed.closeFirst(() => watch.close());
});

const madeUpToken = () => `lk${Array.from({ length: 10 }, () => randomInt(36).toString(36)).join('')}_${randomBytes(32).toString('base64url')}`;
const me = (token: string) => t.http.get('/api/v1/me').set('Authorization', `Bearer ${token}`);
const view = () => t.ctx.apiKeyPrefixes;

async function expectRefused(token: string, message = /invalid/i): Promise<void> {
  const response = await me(token);
  expect(response.status).toBe(401);
  expect(response.body).toMatchObject({ error: 'invalid_api_key', message: expect.stringMatching(message) });
}

const cli = (args: string[]) => cliJson(t.databaseUrl, args);

const setKeyCreationNotified = (on: boolean) => sql.raw(`ALTER TABLE api_keys ${on ? 'ENABLE ALWAYS' : 'DISABLE'} TRIGGER api_keys_changed`).execute(t.ctx.db);

describe('made-up API keys', () => {
  it('are refused with 401 invalid_api_key without a database query', async () => {
    expect(view().isTrusted).toBe(true);
    const unused = await createTenant(t.ctx.db);
    await watch.mark();
    for (let sent = 0; sent < 60; sent += 20) {
      await Promise.all(Array.from({ length: 20 }, () => expectRefused(madeUpToken())));
    }
    expect(await watch.connectionsWithStatementsSinceMark()).toBe(0);

    // The control: an existing prefix not cached yet is looked up, and the watch sees it.
    await expectRefused(`${unused.prefix}_${'B'.repeat(43)}`);
    expect(await watch.connectionsWithStatementsSinceMark()).toBeGreaterThan(0);
  });

  it('do not shadow a key created by another process, which works at once and is refused at once when revoked', async () => {
    const workspace = await cli(['workspace', 'create', '--name', 'Elsewhere']);
    const admin = await cli(['user', 'create', '--workspace', String(workspace.id), '--email', 'ops@elsewhere.test']);
    const key = await cli(['key', 'create', '--workspace', String(workspace.id), '--user', String(admin.id), '--name', 'From the CLI']);
    // Within the notification's delay: milliseconds after the CLI's commit.
    await eventually(async () => (await me(key.token)).status === 200, 1000, 10);
    expect(view().isTrusted).toBe(true);
    expect(view().mayExist(key.prefix)).toBe(true);

    await cli(['key', 'revoke', '--id', String(key.id)]);
    await eventually(async () => (await me(key.token)).status === 401, 1000, 10);
    await expectRefused(key.token, /revoked/i);
  });

  itWithKeyTrigger('do not shadow keys created after the load, also past the merge of new keys into the sorted view', async () => {
    const created = Array.from({ length: 1_100 }, () => generateToken());
    await t.ctx.db
      .insertInto('api_keys')
      .values(
        created.map((token, index) => ({
          workspace_id: tenant.workspaceId,
          user_id: tenant.userId,
          name: `Bulk ${index}`,
          prefix: token.prefix,
          token_hash: token.hash,
          scopes: [],
        })),
      )
      .execute();
    await eventually(async () => created.every((token) => view().mayExist(token.prefix)), 2000);
    expect(view().isTrusted).toBe(true);
    for (const token of [created[0]!, created[600]!, created[1_099]!]) expect((await me(token.token)).status).toBe(200);
    await watch.mark();
    await expectRefused(madeUpToken());
    expect(await watch.connectionsWithStatementsSinceMark()).toBe(0);
  });

  itWithKeyTrigger('are looked up in the database while the view cannot be trusted, and valid keys keep working', async () => {
    // Without the INSERT trigger the view cannot hear of new keys, so after the reconnect it
    // waits instead of loading: that holds it untrusted for as long as this test needs.
    await setKeyCreationNotified(false);
    const { rows } = await sql<{ pid: number }>`
      SELECT pg_terminate_backend(pid), pid FROM pg_stat_activity
      WHERE datname = current_database() AND query = 'LISTEN api_key_changed'
    `.execute(t.ctx.db);
    expect(rows).toHaveLength(1);
    await eventually(async () => !view().isTrusted, 1000, 5);

    // A key the view never hears of (no trigger), and one it knew before.
    const unheard = await createTenant(t.ctx.db);
    await watch.mark();
    await expectRefused(madeUpToken());
    expect(await watch.connectionsWithStatementsSinceMark()).toBeGreaterThan(0);
    expect((await me(unheard.token)).status).toBe(200);
    expect((await me(tenant.token)).status).toBe(200);
    expect(view().isTrusted).toBe(false);

    // Back on: the reconnected view loads, and the load includes the key it never heard of.
    await setKeyCreationNotified(true);
    await eventually(async () => view().isTrusted, 5000);
    expect(view().mayExist(unheard.prefix)).toBe(true);
    await watch.mark();
    await expectRefused(madeUpToken());
    expect(await watch.connectionsWithStatementsSinceMark()).toBe(0);
    expect((await me(unheard.token)).status).toBe(200);
  });
});
