import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { verifyWebhook } from '../../src/client/index.js';
import { pushLead } from '../../src/connectors/service.js';
import { createWorkflow } from '../../src/workflows/service.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, outboundTestBed, plainConnector } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { postBatch, postLead, uniqueName } from '../support/requests.js';
import { OPERATOR } from '../../src/audit/service.js';

// Erasing a person (lead erase) reaches every copy of their data, tells every receiver, and
// with --suppress refuses them afterwards; lead export gives everything stored about them.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

interface Person {
  name: string;
  email: string;
  phone: string;
  phoneDigits: string;
  linkedin: string;
}

function newPerson(): Person {
  const handle = uniqueName('erin-erasable-');
  const digits = `1415${String(Date.now()).slice(-7)}`;
  return { name: `Erin ${handle}`, email: `${handle}@${handle}-corp.test`, phone: `+${digits}`, phoneDigits: digits, linkedin: `https://www.linkedin.com/in/${handle}` };
}

/**
 * Where any of the texts is stored: every text, varchar, json, jsonb, array and bytea column of
 * every table of the database (information_schema), as `table.column`.
 */
async function whereStored(texts: readonly string[]): Promise<string[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string; data_type: string }>`
    SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns AS c
    JOIN information_schema.tables AS tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name AND tb.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public' AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'bytea')
  `.execute(t.ctx.db);
  expect(columns.length).toBeGreaterThan(30);
  const found: string[] = [];
  for (const column of columns) {
    const value = column.data_type === 'bytea' ? sql`encode(${sql.ref(column.column_name)}, 'escape')` : sql`${sql.ref(column.column_name)}::text`;
    const { rows } = await sql<{ hit: string }>`
      SELECT needle AS hit FROM ${sql.table(column.table_name)}, unnest(${[...texts]}::text[]) AS needle
      WHERE strpos(lower(${value}), lower(needle)) > 0 LIMIT 1
    `.execute(t.ctx.db);
    if (rows.length > 0) found.push(`${column.table_name}.${column.column_name} (${rows[0]!.hit})`);
  }
  return found;
}

const erasureNotices = () =>
  receiver.requests.filter((request) => request.body.includes('"lead_erased"')).map((request) => ({ path: `${request.path}?${request.query}`, body: JSON.parse(request.body) }));

/** A tenant with a connector whose receiver answers a CRM record id, and a lead_created workflow whose Custom URL carries the email. */
async function receivingTenant(): Promise<{ tenant: Tenant; connectorId: number; connectorSecret: string; workflowId: number }> {
  const tenant = await createTenant(t.ctx.db);
  receiver.routes['/crm'] = { status: 200, body: JSON.stringify({ id: 'crm-4711' }), headers: { 'content-type': 'application/json' } };
  const connector = await plainConnector(t.ctx.db, tenant.workspaceId, `${receiver.url}/crm`);
  const workflow = await createWorkflow(t.ctx.db, OPERATOR, {
    workspaceId: tenant.workspaceId,
    trigger: 'lead_created',
    block: { endpoint: 'url', url: `${receiver.url}/hook?who={{lead.email}}`, method: 'POST', format: 'json', headers: [], fields: [{ key: 'name', value: '{{lead.name}}' }] },
  });
  return { tenant, connectorId: connector.id, connectorSecret: connector.signing_secret!, workflowId: workflow.id };
}

describe('lead erase and lead export', () => {
  it('export gives everything stored; erase leaves no copy anywhere, tells both receivers, and with --suppress refuses the person afterwards', async () => {
    const { tenant, connectorId, connectorSecret, workflowId } = await receivingTenant();
    const person = newPerson();
    const body = { name: person.name, email: person.email, phone: person.phone, linkedin_url: person.linkedin, tags: ['Erasable'], enrich: false };
    const created = await postLead(t, tenant, body, { 'Idempotency-Key': `erase-${person.email}` });
    expect(created.status).toBe(201);
    const leadId = created.body.data.id as number;
    await eventually(
      async () => {
        await drain(t);
        return receiver.requests.some((request) => request.path.startsWith('/hook'));
      },
      10000,
      50,
    );
    expect(await pushLead(t.ctx, connectorId, leadId, tenant.workspaceId)).toMatchObject({ delivered: true });

    const exported = await cli(t, ['lead', 'export', '--workspace', String(tenant.workspaceId), '--email', person.email.toUpperCase()]);
    expect(exported.leads).toHaveLength(1);
    const [record] = exported.leads;
    expect(record.lead).toMatchObject({ id: leadId, name: person.name, emails: [person.email], phones: [person.phoneDigits] });
    expect(record.crm_record_id).toBe('crm-4711');
    expect(record.identities).toEqual(
      expect.arrayContaining([
        { kind: 'email', value: person.email },
        { kind: 'linkedin', value: person.linkedin.split('/in/')[1] },
      ]),
    );
    expect(record.tags).toEqual([expect.objectContaining({ name: 'Erasable' })]);
    expect(record.company).toMatchObject({ domain: person.email.split('@')[1] });
    expect(record.deliveries).toHaveLength(2);
    for (const delivery of record.deliveries) {
      expect(delivery.body).toContain(person.name);
      expect(delivery.url).toContain(receiver.url);
    }
    expect(record.deliveries.find((delivery: any) => delivery.workflow_id === workflowId).url).toContain(encodeURIComponent(person.email));
    expect(record.deliveries.find((delivery: any) => delivery.connector_id === connectorId).reply).toContain('crm-4711');
    expect(exported.stored_answers).toHaveLength(1);

    const erased = await cli(t, ['lead', 'erase', '--workspace', String(tenant.workspaceId), '--email', person.email, '--suppress']);
    expect(erased).toEqual({
      erased: [leadId],
      notified: [
        { kind: 'connector', id: connectorId },
        { kind: 'workflow', id: workflowId },
      ],
      receipt: expect.objectContaining({ id: expect.stringMatching(/^erasure_/), suppressed: true, deliveries_tombstoned: 2, stored_answers_removed: 1 }),
    });

    await eventually(
      async () => {
        await drain(t);
        return erasureNotices().length === 2;
      },
      10000,
      50,
    );
    const notices = erasureNotices().sort((a, b) => a.path.localeCompare(b.path));
    expect(notices.map((notice) => notice.path)).toEqual(['/crm?', '/hook?who=']);
    expect(notices.map((notice) => notice.body)).toEqual([
      { event: 'lead_erased', lead_id: leadId, crm_record_id: 'crm-4711', sent_at: expect.any(String) },
      { event: 'lead_erased', lead_id: leadId, crm_record_id: 'crm-4711', sent_at: expect.any(String) },
    ]);

    // Signed like every delivery: the TypeScript client verifies it and types it as the documented event.
    const crmNotice = receiver.requests.find((request) => request.path === '/crm' && request.body.includes('"lead_erased"'))!;
    expect(await verifyWebhook(connectorSecret, crmNotice.headers as Record<string, string>, crmNotice.body)).toMatchObject({ event: 'lead_erased', lead_id: leadId });

    expect(await whereStored([person.email, person.name, person.phoneDigits, person.linkedin.split('/in/')[1]!])).toEqual([]);
    expect((await t.http.get(`/api/v1/leads/${leadId}`).set(tenant.auth)).status).toBe(404);

    // The stored answer is gone: a retry under its key runs afresh, and is refused like any write of the person.
    const retried = await postLead(t, tenant, body, { 'Idempotency-Key': `erase-${person.email}` });
    expect(retried.status).toBe(422);
    expect(retried.body).toEqual({
      errors: { email: ["This person asked not to be stored; their email address is on this workspace's suppression list, so the lead was not saved."] },
    });
    const batch = await postBatch(t, tenant, {
      leads: [
        { name: 'Someone Else', email: `${uniqueName('else')}@gmail.com` },
        { name: 'Again', phone: person.phone },
      ],
    });
    expect(batch.body.data.map((row: any) => [row.status, row.field ?? null])).toEqual([
      ['created', null],
      ['failed', 'phone'],
    ]);
    const alone = await postBatch(t, tenant, { leads: [{ name: 'Again', linkedin_url: person.linkedin.toUpperCase() }] });
    expect([alone.status, alone.body.data[0].status, alone.body.data[0].field, alone.body.meta.failed]).toEqual([200, 'failed', 'linkedin_url', 1]);
    expect(await whereStored([person.email, person.phoneDigits])).toEqual([]);
  });

  it('without --suppress the person can be stored again; an unknown lead id is refused', async () => {
    const tenant = await createTenant(t.ctx.db);
    const person = newPerson();
    const first = await postLead(t, tenant, { name: person.name, email: person.email, enrich: false });
    expect(first.status).toBe(201);
    const erased = await cli(t, ['lead', 'erase', '--workspace', String(tenant.workspaceId), '--id', String(first.body.data.id)]);
    expect(erased).toMatchObject({ erased: [first.body.data.id], notified: [], receipt: { suppressed: false } });
    const again = await postLead(t, tenant, { name: person.name, email: person.email, enrich: false });
    expect(again.status).toBe(201);
    expect(again.body.data.id).not.toBe(first.body.data.id);
    // The audit log names the lead by id, and the operator: never a detail of the person.
    const audit = await cli(t, ['audit', 'list', '--workspace', String(tenant.workspaceId)]);
    const entry = audit.find((row: any) => row.action === 'lead.erased');
    expect(entry).toMatchObject({ actor: { type: 'operator' }, target: { type: 'lead', id: first.body.data.id } });
    expect(JSON.stringify(audit)).not.toContain(person.email);
    expect(await cliRefused(t, ['lead', 'erase', '--workspace', String(tenant.workspaceId), '--id', String(first.body.data.id)])).toMatchObject({ error: 'not_found' });
  });
});
