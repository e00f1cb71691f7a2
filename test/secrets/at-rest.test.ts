import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { DEFAULT_KEY_FILE, keyring, sealUnboundWith, secretKeyId } from '../../src/secrets/keyring.js';
import type { TestApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, LOCAL_DELIVERY_ENV, outboundTestBed } from '../support/outbound.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';

// Connector credentials and signing secrets exist in clear only in memory: the tables hold
// ciphertext, and delivery rows get the auth header and the signatures only at send time.

// Every test runs the CLI several times, each a process of its own: seconds apiece on a loaded machine.
jest.setTimeout(90_000);

const bed = outboundTestBed([{}]);
let t: TestApp;
let receiver: Receiver;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    receiver,
    tenants: [tenant],
  } = bed);
});

/** Every text-like column of every table, as one text per row and column. */
async function storedTexts(): Promise<string[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
    SELECT c.table_name, c.column_name FROM information_schema.columns AS c
    JOIN information_schema.tables AS t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public' AND c.data_type IN ('text', 'jsonb', 'json', 'character varying', 'bytea')
  `.execute(t.ctx.db);
  const tables = new Set(columns.map((column) => column.table_name));
  for (const table of ['connectors', 'workflows', 'deliveries', 'delivery_attempts', 'outbox']) expect(tables).toContain(table);
  const texts: string[] = [];
  for (const { table_name, column_name } of columns) {
    const { rows } = await sql<{ value: string | null }>`SELECT ${sql.ref(column_name)}::text AS value FROM ${sql.table(table_name)}`.execute(t.ctx.db);
    texts.push(...rows.flatMap((row) => (row.value === null ? [] : [row.value])));
  }
  return texts;
}

const connectorTest = (id: number) => cli<{ delivered: boolean }>(t, ['connector', 'test', '--id', String(id)]);
const lastRequest = (): ReceivedRequest => receiver.requests.at(-1)!;
const signatures = (request: ReceivedRequest) => String(request.headers['webhook-signature']).split(' ');

describe('secrets at rest', () => {
  // CLI processes for every connector, then deliveries retried until they fail: more than the default 30 s on a loaded machine.
  it('no table holds a credential or signing secret in clear, after connectors are created and deliveries sent, retried and failed', async () => {
    const workspace = String(tenant.workspaceId);
    const create = (path: string, auth: string[], secret: Record<string, string>) =>
      cli<{ id: number; signing_secret: string }>(t, ['connector', 'create', '--workspace', workspace, '--url', `${receiver.url}/${path}`, ...auth], secret);
    const bearer = await create('bearer', ['--auth', 'bearer'], { LEAD_INTAKE_CONNECTOR_TOKEN: 'tok_clear_bearer_7f3a' });
    const basic = await create('basic', ['--auth', 'basic', '--username', 'crm_user'], { LEAD_INTAKE_CONNECTOR_PASSWORD: 'pw_clear_basic_91c2' });
    const header = await create('header', ['--auth', 'header', '--header-name', 'X-Api-Key', '--header', 'X-Auth-Token=ch_clear_constant_3b8d', '--header', 'X-Team=sales'], {
      LEAD_INTAKE_CONNECTOR_HEADER_VALUE: 'hv_clear_header_5d0e',
    });
    // Headers typed into a Custom URL block are credentials too when their name says so.
    const workflow = await cli<{ signing_secret: string }>(t, [
      'workflow',
      'create',
      '--workspace',
      workspace,
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/workflow`,
      '--header',
      'Authorization=Bearer wf_clear_block_c41e',
    ]);

    for (const connector of [bearer, basic, header]) expect((await connectorTest(connector.id)).delivered).toBe(true);
    const lead = await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Ada Lovelace', email: 'ada@analytical.test', enrich: false });
    expect(lead.status).toBe(201);
    await drain(t);
    // A push the receiver refuses stays pending for a retry: its row must not hold the token either.
    receiver.queue({ status: 503 });
    const pushed = await cli<{ branch: string }>(t, ['connector', 'push', '--id', String(bearer.id), '--lead', String(lead.body.data.id)]);
    expect(pushed.branch).toBe('pending');

    // The receivers got the credentials, added at send time.
    const byPath = (path: string) => receiver.requests.find((request) => request.path === `/${path}`)!;
    expect(byPath('bearer').headers.authorization).toBe('Bearer tok_clear_bearer_7f3a');
    expect(byPath('basic').headers.authorization).toBe(`Basic ${Buffer.from('crm_user:pw_clear_basic_91c2').toString('base64')}`);
    expect(byPath('header').headers['x-api-key']).toBe('hv_clear_header_5d0e');
    expect(byPath('header').headers).toMatchObject({ 'x-auth-token': 'ch_clear_constant_3b8d', 'x-team': 'sales' });
    expect(byPath('workflow').headers.authorization).toBe('Bearer wf_clear_block_c41e');
    expect(() => new Webhook(workflow.signing_secret).verify(byPath('workflow').body, byPath('workflow').headers as Record<string, string>)).not.toThrow();

    const secrets = [
      'tok_clear_bearer_7f3a',
      'pw_clear_basic_91c2',
      Buffer.from('crm_user:pw_clear_basic_91c2').toString('base64'),
      'hv_clear_header_5d0e',
      'ch_clear_constant_3b8d',
      'wf_clear_block_c41e',
      ...[bearer, basic, header, workflow].flatMap(({ signing_secret }) => [signing_secret, signing_secret.replace(/^whsec_/, '')]),
    ];
    const texts = await storedTexts();
    expect(texts.length).toBeGreaterThan(20);
    expect(secrets.filter((secret) => texts.some((text) => text.includes(secret)))).toEqual([]);
  });
});

describe('connector rotate-secret', () => {
  it('signs with the new and the previous secret during the overlap, then with the new one only', async () => {
    const connector = await cli<{ id: number; signing_secret: string }>(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/rotated`]);
    const rotated = await cli<{ id: number; signing_secret: string; previous_secret_signs_until: string }>(t, ['connector', 'rotate-secret', '--id', String(connector.id)]);
    expect(rotated.signing_secret).toMatch(/^whsec_/);
    expect(rotated.signing_secret).not.toBe(connector.signing_secret);
    const overlapHours = (Date.parse(rotated.previous_secret_signs_until) - Date.now()) / 3_600_000;
    expect(overlapHours).toBeGreaterThan(23.9);
    expect(overlapHours).toBeLessThanOrEqual(24);

    await connectorTest(connector.id);
    const during = lastRequest();
    expect(signatures(during)).toHaveLength(2);
    for (const secret of [rotated.signing_secret, connector.signing_secret]) {
      expect(() => new Webhook(secret).verify(during.body, during.headers as Record<string, string>)).not.toThrow();
      // Each signature on its own is the one of its secret.
      const alone = signatures(during).filter((signature) => {
        try {
          new Webhook(secret).verify(during.body, { ...during.headers, 'webhook-signature': signature } as unknown as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      });
      expect(alone).toHaveLength(1);
    }

    await t.ctx.db
      .updateTable('connectors')
      .set({ previous_secret_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', connector.id)
      .execute();
    await connectorTest(connector.id);
    const after = lastRequest();
    expect(signatures(after)).toHaveLength(1);
    expect(() => new Webhook(rotated.signing_secret).verify(after.body, after.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(connector.signing_secret).verify(after.body, after.headers as Record<string, string>)).toThrow();
  });

  it('takes --overlap-hours (0: the previous secret stops at once) and refuses bad input', async () => {
    const connector = await cli<{ id: number }>(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/at-once`]);
    const rotated = await cli<{ signing_secret: string }>(t, ['connector', 'rotate-secret', '--id', String(connector.id), '--overlap-hours', '0']);
    await connectorTest(connector.id);
    expect(signatures(lastRequest())).toHaveLength(1);
    expect(() => new Webhook(rotated.signing_secret).verify(lastRequest().body, lastRequest().headers as Record<string, string>)).not.toThrow();

    expect(await cliRefused(t, ['connector', 'rotate-secret', '--id', String(connector.id), '--overlap-hours', '-1'])).toMatchObject({ error: 'invalid_argument' });
    expect(await cliRefused(t, ['connector', 'rotate-secret', '--id', String(connector.id), '--overlap-hours', '721'])).toMatchObject({ error: 'invalid_argument' });
    expect(await cliRefused(t, ['connector', 'rotate-secret', '--id', '999999'])).toMatchObject({ error: 'not_found' });
  });
});

// Last in this file: afterwards the stored secrets open only with the new key, not with the
// checkout's key file this test process uses.
describe('secrets reencrypt', () => {
  it('seals every stored secret with the new SECRETS_KEY, after which the previous key is not needed', async () => {
    const fileKey = fs.readFileSync(DEFAULT_KEY_FILE, 'utf8').trim();
    const newKey = randomBytes(32).toString('base64');
    const connector = await cli<{ id: number }>(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/rekeyed`, '--auth', 'bearer'], {
      LEAD_INTAKE_CONNECTOR_TOKEN: 'tok_rekeyed',
    });

    // A value from before sealed values were bound to their place (v1) is sealed again as v2 too.
    const v1Secret = 'whsec_dW5ib3VuZCB2MSBzZWNyZXQ=';
    await sql`UPDATE connectors SET signing_secret = ${sealUnboundWith(keyring(), v1Secret)} WHERE id = ${connector.id}`.execute(t.ctx.db);

    const result = await cli<{ key_id: string; connectors: number; workflows: number; deliveries: number }>(t, ['secrets', 'reencrypt'], {
      SECRETS_KEY: newKey,
      SECRETS_KEY_PREVIOUS: fileKey,
    });
    const newId = secretKeyId(Buffer.from(newKey, 'base64'));
    expect(result.key_id).toBe(newId);
    expect(result.connectors).toBeGreaterThan(0);
    const stored = await sql<{ signing_secret: string }>`SELECT signing_secret FROM connectors UNION ALL SELECT signing_secret FROM workflows`.execute(t.ctx.db);
    expect(stored.rows.filter((row) => !row.signing_secret.startsWith(`v2:${newId}:`))).toEqual([]);
    // The credential headers of delivery rows (from the first test) too: none sealed with another key.
    expect(result.deliveries).toBeGreaterThan(0);
    const sealedElsewhere = await sql`SELECT id FROM deliveries WHERE headers::text ~ '"v[12]:' AND headers::text !~ ${`"v2:${newId}:`}`.execute(t.ctx.db);
    expect(sealedElsewhere.rows).toEqual([]);

    expect(await cli(t, ['connector', 'test', '--id', String(connector.id)], { SECRETS_KEY: newKey })).toMatchObject({ delivered: true });
    expect(lastRequest().headers.authorization).toBe('Bearer tok_rekeyed');
    expect(() => new Webhook(v1Secret).verify(lastRequest().body, lastRequest().headers as Record<string, string>)).not.toThrow();
    const refused = await runCli(['connector', 'test', '--id', String(connector.id)], { DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'warn', ...LOCAL_DELIVERY_ENV });
    expect(refused.code).not.toBe(0);
    expect(refused.error).toMatchObject({ error: 'invalid_configuration', message: expect.stringContaining(newId) });
  });
});
