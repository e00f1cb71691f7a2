import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { createConnector } from '../../src/connectors/service.js';
import { findConnectors } from '../../src/connectors/repository.js';
import { composeConnectorDelivery, composeCustomUrlDelivery } from '../../src/deliveries/compose.js';
import { insertDeliveries } from '../../src/deliveries/repository.js';
import { createWorkflow } from '../../src/workflows/service.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { addUser, http, signInByLink, startConsoleBed, type ConsoleSession } from './support.js';
import { OPERATOR } from '../../src/audit/service.js';

// Stored secrets in the console: a sealed value moved to another row, column or workspace does
// not open there (a clear 409 page, never a 500), and members never see an endpoint's URL path,
// constant or block field values, in full, anywhere the console shows them.

let app: TestApp;
let tenant: Tenant;
let other: Tenant;
let admin: ConsoleSession;
let member: ConsoleSession;
beforeAll(async () => {
  ({ app, tenant, other, admin } = await startConsoleBed());
  member = await signInByLink(app, (await addUser(app.ctx.db, tenant.workspaceId, 'member')).id);
});
afterAll(async () => {
  await app.close();
});

const SLACK_URL = 'https://hooks.slack.example/services/T0PATH/B0PATH/pathSecretXXXX';
const newConnector = (workspaceId: number, overrides: { url?: string; fields?: Array<{ key: string; value: string }> } = {}) =>
  createConnector(app.ctx.db, OPERATOR, {
    workspace_id: workspaceId,
    url: overrides.url ?? 'https://crm.example/hook',
    method: 'POST',
    format: 'json',
    auth: { type: 'bearer', token: 'tok_sealed_in_place_1234' },
    mapping: [],
    fields: overrides.fields ?? [],
    headers: [{ key: 'X-Api-Key', value: 'hdr_sealed_in_place_5678' }],
    auto_push: false,
  });

describe('a sealed value moved with SQL', () => {
  const refusedPlainly = (answer: { status: number; text: string }) => {
    expect(answer.status).toBe(409);
    expect(answer.text).toMatch(/A stored secret cannot be used: connectors\.\w+ of row \d+ \(workspace \d+\) does not open: it was sealed for another row, column or workspace/);
  };
  const reveal = (session: ConsoleSession, id: number) => session.post(`/console/connectors/${id}/reveal-secret`);

  it('to another row, another column or another workspace no longer opens there: a 409 page; the pages listing it still show, and the value it was taken from still works', async () => {
    const [source, row, column] = [await newConnector(tenant.workspaceId), await newConnector(tenant.workspaceId), await newConnector(tenant.workspaceId)];
    const { db } = app.ctx;
    await sql`UPDATE connectors SET signing_secret = (SELECT signing_secret FROM connectors WHERE id = ${source.id}) WHERE id = ${row.id}`.execute(db);
    // The bearer token, sealed inside auth, copied over the constant credential header of the same connector.
    await sql`UPDATE connectors SET headers = jsonb_build_array(jsonb_build_object('key', 'X-Api-Key', 'value', auth->>'token')) WHERE id = ${column.id}`.execute(db);
    refusedPlainly(await reveal(admin, row.id));
    refusedPlainly(await admin.post(`/console/connectors/${column.id}/test`));
    for (const path of ['/console/connectors', `/console/connectors/${row.id}`, '/console/workflows', '/console/deliveries']) {
      expect([path, (await admin.get(path)).status]).toEqual([path, 200]);
    }

    // The whole row moved to another workspace, id and all: its values were sealed for this one.
    const moved = await newConnector(tenant.workspaceId);
    await sql`UPDATE connectors SET workspace_id = ${other.workspaceId} WHERE id = ${moved.id}`.execute(db);
    refusedPlainly(await reveal(await signInByLink(app, other.userId), moved.id));

    const revealed = await reveal(admin, source.id);
    expect(revealed.status).toBe(200);
    expect(revealed.text).toContain(source.signing_secret);
    await sql`DELETE FROM connectors WHERE id IN (${row.id}, ${column.id}, ${moved.id})`.execute(db);
  });
});

describe('what a member sees of URL paths, constant fields and block fields', () => {
  it('the Connectors, Workflows and delivery pages show a member the origin and masked field values; an admin sees them in full; the lead in the body stays', async () => {
    const { db } = app.ctx;
    const connector = await newConnector(tenant.workspaceId, { url: SLACK_URL, fields: [{ key: 'crm_ref', value: 'const_field_value_9131' }] });
    const block = {
      endpoint: 'url' as const,
      url: `${SLACK_URL}/custom`,
      method: 'POST' as const,
      format: 'form' as const,
      headers: [{ key: 'X-Team', value: 'team_header_value_2741' }],
      fields: [{ key: 'campaign', value: 'block_field_value_5527' }],
    };
    const workflow = await createWorkflow(db, OPERATOR, { workspaceId: tenant.workspaceId, trigger: 'lead_created', block });
    const lead = await http(app).post('/api/v1/leads').set(tenant.auth).send({ name: 'Grace Hopper', email: 'grace@navy.test', enrich: false });
    expect(lead.status).toBe(201);
    const origin = { workspaceId: tenant.workspaceId, trigger: 'push', maxAttempts: 1 };
    const opened = (await findConnectors(db, [connector.id], tenant.workspaceId)).get(connector.id);
    const [pushed, custom] = await insertDeliveries(db, [
      composeConnectorDelivery(origin, { connectorId: connector.id, connector: opened, event: 'lead', lead: lead.body.data }),
      composeCustomUrlDelivery({ ...origin, trigger: 'lead_created' }, { workflowId: workflow.id, block, lead: lead.body.data }),
    ]);
    const secrets = ['T0PATH', 'pathSecretXXXX', 'const_field_value_9131', 'block_field_value_5527', 'team_header_value_2741'];
    const pages = [
      '/console/connectors',
      `/console/connectors/${connector.id}`,
      '/console/workflows',
      `/console/deliveries/${pushed}`,
      `/console/deliveries/${custom}`,
      '/console/deliveries',
      '/console/',
    ];

    for (const path of pages) {
      const shown = await member.get(path);
      expect([path, shown.status]).toEqual([path, 200]);
      expect([path, secrets.filter((secret) => shown.text.includes(secret))]).toEqual([path, []]);
    }
    const [memberPush, memberCustom] = [await member.get(`/console/deliveries/${pushed}`), await member.get(`/console/deliveries/${custom}`)];
    // The lead's own data in a push body stays; a Custom URL body names the lead by id.
    expect(memberPush.text).toContain('Grace Hopper');
    expect(memberCustom.text).toMatch(/lead_id=\d+/);
    expect(memberPush.text).toContain('https://hooks.slack.example/…');
    expect(memberPush.text).toMatch(/&quot;crm_ref&quot;:&quot;\*\*\*\*9131&quot;/);
    expect(memberCustom.text).toMatch(/campaign=\*\*\*\*5527/);

    const [adminPush, adminCustom] = [await admin.get(`/console/deliveries/${pushed}`), await admin.get(`/console/deliveries/${custom}`)];
    expect(adminPush.text).toContain('/services/T0PATH/B0PATH/pathSecretXXXX');
    expect(adminPush.text).toContain('const_field_value_9131');
    expect(adminCustom.text).toContain('block_field_value_5527');
    expect((await admin.get('/console/workflows')).text).toContain('block_field_value_5527');
  });
});
