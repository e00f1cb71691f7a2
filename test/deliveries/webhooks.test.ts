import { beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { enqueue } from '../../src/outbox/repository.js';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, deliveries, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { postLead, uniqueName } from '../support/requests.js';

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const unique = uniqueName;
const post = (tenant: Tenant, body: object) => postLead(t, tenant, body);
const json = (index = 0) => JSON.parse(receiver.requests[index]!.body) as Record<string, unknown>;
const SENT_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

async function newLead(tenant: Tenant, extra: object = {}) {
  const response = await post(tenant, { name: 'Ada Lovelace', email: `${unique('ada')}@analytical.test`, enrich: false, ...extra });
  expect(response.status).toBe(201);
  return response.body.data as { id: number; emails: string[]; phones: string[] };
}

describe('what fires a workflow', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(t.ctx.db);
    await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/created`]);
    await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'tag_added', '--tag', 'VIP', '--url', `${receiver.url}/vip`]);
  });

  it('a created lead fires lead_created; an update without a new tag fires nothing; a new tag fires its own trigger', async () => {
    const lead = await newLead(tenant);
    await drain(t);
    expect(receiver.requests.map((request) => request.path)).toEqual(['/created']);

    receiver.reset();
    expect((await post(tenant, { name: 'Ada L.', email: lead.emails[0] })).status).toBe(200);
    await drain(t);
    expect(receiver.requests).toHaveLength(0);

    expect((await post(tenant, { name: 'Ada L.', email: lead.emails[0], tags: ['vip'] })).status).toBe(200);
    await drain(t);
    expect(receiver.requests.map((request) => request.path)).toEqual(['/vip']);
    expect(json()).toMatchObject({ event: 'workflow', lead_id: lead.id });

    receiver.reset();
    expect((await post(tenant, { name: 'Ada L.', email: lead.emails[0], tags: ['vip'] })).status).toBe(200);
    await drain(t);
    expect(receiver.requests).toHaveLength(0);
  });

  it('a tag given at creation is part of the new lead: only the new-lead trigger fires', async () => {
    await newLead(tenant, { tags: ['VIP'] });
    await drain(t);
    expect(receiver.requests.map((request) => request.path)).toEqual(['/created']);
  });

  it('skipped rows and dry runs fire nothing', async () => {
    const lead = await newLead(tenant);
    await drain(t);
    receiver.reset();
    expect((await post(tenant, { name: 'Skip', email: lead.emails[0], tags: ['vip'], on_duplicate: 'skip' })).status).toBe(200);
    expect((await post(tenant, { name: 'Dry', email: `${unique()}@dry.test`, tags: ['vip'], dry_run: true })).status).toBe(200);
    expect((await post(tenant, { name: 'Dry update', email: lead.emails[0], tags: ['vip'], dry_run: true })).status).toBe(200);
    const batch = await t.http
      .post('/api/v1/leads/batch')
      .set(tenant.auth)
      .send({ leads: [{ name: 'Skip', email: lead.emails[0], tags: ['vip'] }], on_duplicate: 'skip' });
    expect(batch.status).toBe(200);
    await drain(t);
    expect(receiver.requests).toHaveLength(0);
  });

  it('every lead of a batch fires once', async () => {
    const batch = await t.http
      .post('/api/v1/leads/batch')
      .set(tenant.auth)
      .send({ leads: [1, 2, 3].map((n) => ({ name: `Batch ${n}`, email: `${unique('b')}@batch.test` })), enrich: false });
    expect(batch.status).toBe(200);
    await drain(t);
    expect(receiver.requests.filter((request) => request.path === '/created')).toHaveLength(3);
  });
});

describe('Send to CRM block', () => {
  it('runs the connector push from a workflow: event lead, the reply read, the record id stored', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`, '--map', 'name=full_name']);
    const workflow = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--send-to-crm', String(connector.id)]);
    expect(workflow.block).toEqual({ endpoint: 'crm', connector_id: connector.id, fields: [] });
    receiver.queue({ status: 201, body: '{"id":"crm-7"}', headers: { 'content-type': 'application/json' } });
    const lead = await newLead(tenant);
    await drain(t);

    expect(receiver.requests.map((request) => request.path)).toEqual(['/crm']);
    expect(json()).toEqual({ full_name: 'Ada Lovelace', event: 'lead', lead_id: lead.id, sent_at: expect.stringMatching(SENT_AT) });
    const [delivery] = await deliveries(t, tenant.workspaceId, lead.id);
    expect(delivery).toMatchObject({ event: 'lead', sender: 'connector_push', trigger: 'lead_created', workflow_id: workflow.id, branch: 'Delivered' });
    const stored = await t.ctx.db.selectFrom('leads').select('crm_record_id').where('id', '=', lead.id).executeTakeFirstOrThrow();
    expect(stored.crm_record_id).toBe('crm-7');
  });
});

describe('payload envelopes', () => {
  it('Custom URL block: merge tags (URL-encoded in the URL), own envelope winning over block fields', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await cli(t, [
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/hook/{{lead.name}}?email={{lead.email}}&co={{company.name}}`,
      '--header',
      'X-Lead={{lead.name}}',
      '--field',
      'event=hijack',
      '--field',
      'lead_id=999',
      '--field',
      'sent_at=never',
      '--field',
      'workflow_id=1',
      '--field',
      'who={{lead.name}} ({{lead.job_title}}) at {{company.name}}',
      '--field',
      'site={{company.website}}',
      '--field',
      'unknown={{lead.salary}}',
    ]);
    const lead = await newLead(tenant, { name: 'Ada & Co/Lovelace', job_title: 'Analyst', company: { name: 'Engines Ltd', website: 'https://engines.test' } });
    await drain(t);

    expect(receiver.requests).toHaveLength(1);
    const request = receiver.requests[0]!;
    expect(request.path).toBe('/hook/Ada%20%26%20Co%2FLovelace');
    expect(new URLSearchParams(request.query).get('email')).toBe(lead.emails[0]);
    expect(new URLSearchParams(request.query).get('co')).toBe('Engines Ltd');
    expect(request.headers['x-lead']).toBe('Ada & Co/Lovelace');
    expect(request.headers['content-type']).toBe('application/json');
    const body = json();
    expect(body).toEqual({
      who: 'Ada & Co/Lovelace (Analyst) at Engines Ltd',
      site: 'https://engines.test',
      unknown: '{{lead.salary}}',
      event: 'workflow',
      lead_id: lead.id,
      workflow_id: workflow.id,
      sent_at: expect.stringMatching(SENT_AT),
    });
    expect(Object.keys(body).slice(-4)).toEqual(['event', 'lead_id', 'workflow_id', 'sent_at']);
  });

  it('Saved connector block: constant fields, mapped fields, envelope, then block fields on top', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, [
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      `${receiver.url}/crm`,
      '--map',
      'name=full_name',
      '--map',
      'email=contact',
      '--field',
      'source=lead-intake',
      '--field',
      'full_name=constant loses',
    ]);
    await cli(t, [
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--connector',
      String(connector.id),
      '--field',
      'event=crm_sync',
      '--field',
      'owner={{lead.name}}',
    ]);
    const lead = await newLead(tenant);
    await drain(t);

    expect(receiver.requests.map((request) => request.path)).toEqual(['/crm']);
    expect(json()).toEqual({
      source: 'lead-intake',
      full_name: 'Ada Lovelace',
      contact: lead.emails[0],
      event: 'crm_sync',
      lead_id: lead.id,
      sent_at: expect.stringMatching(SENT_AT),
      owner: 'Ada Lovelace',
    });
    const [delivery] = await deliveries(t, tenant.workspaceId, lead.id);
    expect(delivery).toMatchObject({ event: 'workflow', sender: 'saved_connector', branch: 'Delivered', status_code: 200, attempts: 1 });
  });

  it('Saved connector: its URL and headers are sent as saved, merge tags and all (only block fields are rendered)', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, [
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      `${receiver.url}/crm/{{lead.id}}?who={{lead.name}}`,
      '--header',
      'X-Lead={{lead.name}}',
    ]);
    await cli(t, [
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--connector',
      String(connector.id),
      '--field',
      'owner={{lead.name}}',
    ]);
    const lead = await newLead(tenant);
    await drain(t);
    expect(await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(lead.id)])).toMatchObject({ delivered: true });

    expect(receiver.requests).toHaveLength(2);
    for (const request of receiver.requests) {
      expect(decodeURIComponent(request.path)).toBe('/crm/{{lead.id}}');
      expect(new URLSearchParams(request.query).get('who')).toBe('{{lead.name}}');
      expect(request.headers['x-lead']).toBe('{{lead.name}}');
    }
    expect(json(0).owner).toBe('Ada Lovelace');
  });

  it('connector push: the envelope cannot be overridden by the mapping; the default set has documented keys', async () => {
    const tenant = await createTenant(t.ctx.db);
    const mapped = await cli(t, [
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      `${receiver.url}/mapped`,
      '--map',
      'name=event',
      '--map',
      'job_title=lead_id',
      '--field',
      'sent_at=constant',
    ]);
    const plain = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/default`]);
    const lead = await newLead(tenant, { job_title: 'CTO', phone: '+44 20 7946 0001', tags: ['Alpha'], company: { name: 'Engines Ltd' } });

    expect(await cli(t, ['connector', 'push', '--id', String(mapped.id), '--lead', String(lead.id)])).toMatchObject({ delivered: true, status: 200 });
    expect(json(0)).toEqual({ event: 'lead', lead_id: lead.id, sent_at: expect.stringMatching(SENT_AT) });

    await cli(t, ['connector', 'push', '--id', String(plain.id), '--lead', String(lead.id)]);
    expect(json(1)).toEqual({
      id: lead.id,
      name: 'Ada Lovelace',
      email: lead.emails[0],
      phone: lead.phones[0],
      job_title: 'CTO',
      company: 'Engines Ltd',
      stage: 'new',
      tags: ['Alpha'],
      event: 'lead',
      lead_id: lead.id,
      sent_at: expect.stringMatching(SENT_AT),
    });
  });

  it('a run without a lead: Custom URL calls without lead_id (a block field lead_id survives); Saved connector fails without calling', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/saved`]);
    const custom = await cli(t, [
      'workflow',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/custom`,
      '--field',
      'lead_id=from-block',
    ]);
    const saved = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--connector', String(connector.id)]);
    // An event whose lead no longer exists.
    await enqueue(t.ctx.db, tenant.workspaceId, [{ topic: 'lead.created', payload: { lead_id: 987654321 } }]);
    await drain(t);

    expect(receiver.requests.map((request) => request.path)).toEqual(['/custom']);
    expect(json()).toEqual({ lead_id: 'from-block', event: 'workflow', workflow_id: custom.id, sent_at: expect.stringMatching(SENT_AT) });
    const listed = await deliveries(t, tenant.workspaceId);
    expect(listed.find((delivery) => delivery.workflow_id === saved.id)).toMatchObject({
      branch: 'Failed',
      attempts: 0,
      status_code: null,
      error: expect.stringMatching(/no lead/i),
    });
  });
});

describe('encodings, authentication and headers', () => {
  let tenant: Tenant;
  let leadId: number;
  beforeAll(async () => {
    tenant = await createTenant(t.ctx.db);
    leadId = (await newLead(tenant, { tags: ['Alpha', 'Beta'] })).id;
  });
  const push = async (args: string[], env: Record<string, string> = {}) => {
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), ...args], env);
    const result = await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)]);
    expect(result).toMatchObject({ delivered: true, error: null });
    return { connector, request: receiver.requests.at(-1)! };
  };

  it('form-encoded bodies with lists comma-joined', async () => {
    const { request } = await push(['--url', `${receiver.url}/form`, '--format', 'form', '--method', 'PUT', '--field', 'note=a b&c']);
    expect(request.method).toBe('PUT');
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const form = new URLSearchParams(request.body);
    expect(form.get('note')).toBe('a b&c');
    expect(form.get('tags')).toBe('Alpha,Beta');
    expect(form.get('event')).toBe('lead');
    expect(form.get('lead_id')).toBe(String(leadId));
  });

  it('GET and DELETE send the payload as a query string and no body', async () => {
    for (const method of ['GET', 'DELETE']) {
      const { request } = await push(['--url', `${receiver.url}/query?existing=1`, '--method', method]);
      expect(request.method).toBe(method);
      expect(request.body).toBe('');
      const query = new URLSearchParams(request.query);
      expect(query.get('existing')).toBe('1');
      expect(query.get('event')).toBe('lead');
      expect(query.get('name')).toBe('Ada Lovelace');
    }
  });

  it('bearer, basic and custom-header authentication', async () => {
    expect((await push(['--url', `${receiver.url}/a`, '--auth', 'bearer'], { LEAD_INTAKE_CONNECTOR_TOKEN: 'tok_123' })).request.headers.authorization).toBe('Bearer tok_123');
    expect((await push(['--url', `${receiver.url}/a`, '--auth', 'basic', '--username', 'crm'], { LEAD_INTAKE_CONNECTOR_PASSWORD: 's3cret' })).request.headers.authorization).toBe(
      `Basic ${Buffer.from('crm:s3cret').toString('base64')}`,
    );
    expect(
      (await push(['--url', `${receiver.url}/a`, '--auth', 'header', '--header-name', 'X-Api-Key'], { LEAD_INTAKE_CONNECTOR_HEADER_VALUE: 'key-9' })).request.headers['x-api-key'],
    ).toBe('key-9');
  });

  it('strips reserved and invalid header names and line breaks in values', async () => {
    const { request } = await push([
      '--url',
      `${receiver.url}/h`,
      '--header',
      'Host=evil.test',
      '--header',
      'Content-Length=1',
      '--header',
      'Connection=close',
      '--header',
      'Transfer-Encoding=chunked',
      '--header',
      'Bad Header=x',
      '--header',
      'X-Ok=fine',
      '--header',
      'X-Split=one\r\nX-Injected: yes',
      '--header',
      'webhook-id=forged',
    ]);
    expect(request.headers.host).toBe(`127.0.0.1:${receiver.port}`);
    expect(request.headers['content-length']).toBe(String(Buffer.byteLength(request.body)));
    expect(request.headers['transfer-encoding']).toBeUndefined();
    expect(request.headers['x-ok']).toBe('fine');
    expect(request.headers['x-split']).toBe('oneX-Injected: yes');
    expect(request.headers['x-injected']).toBeUndefined();
    expect(request.headers['webhook-id']).toMatch(/^msg_/);
    expect(Object.keys(request.headers).some((name) => name.includes(' '))).toBe(false);
  });

  it('strips a Connection header of the configuration, whatever its value', async () => {
    const { request } = await push(['--url', `${receiver.url}/connection`, '--header', 'Connection=keep-alive, X-Smuggled', '--header', 'X-Smuggled=kept']);
    expect(request.headers.connection ?? '').not.toMatch(/smuggled/i);
    expect(request.headers['x-smuggled']).toBe('kept');
  });

  it('caps constant headers at 20, dropping the rest silently', async () => {
    const headers = Array.from({ length: 25 }, (_, index) => ['--header', `X-H${index}=${index}`]).flat();
    const { request } = await push(['--url', `${receiver.url}/cap`, ...headers]);
    expect(Object.keys(request.headers).filter((name) => name.startsWith('x-h'))).toHaveLength(20);
  });

  it('caps mapped fields at 50, dropping the rest silently', async () => {
    const mapping = Array.from({ length: 55 }, (_, index) => ['--map', `name=k${index}`]).flat();
    const { request } = await push(['--url', `${receiver.url}/mapped-cap`, ...mapping]);
    expect(Object.keys(JSON.parse(request.body)).filter((key) => /^k\d+$/.test(key))).toHaveLength(50);
  });

  it('signs every delivery so the standardwebhooks package verifies it (body, and query string for GET)', async () => {
    const posted = await push(['--url', `${receiver.url}/signed`]);
    const verified = new Webhook(posted.connector.signing_secret as string).verify(posted.request.body, posted.request.headers as Record<string, string>);
    expect(verified).toMatchObject({ event: 'lead', lead_id: leadId });
    expect(posted.connector.signing_secret).toMatch(/^whsec_/);
    expect(posted.request.headers['webhook-signature']).toMatch(/^v1,/);
    expect(() => new Webhook(posted.connector.signing_secret as string).verify(`${posted.request.body} `, posted.request.headers as Record<string, string>)).toThrow();

    const fetched = await push(['--url', `${receiver.url}/signed`, '--method', 'GET']);
    expect(() =>
      new Webhook(fetched.connector.signing_secret as string).verify(fetched.request.query, fetched.request.headers as Record<string, string>, { jsonParse: false }),
    ).not.toThrow();
  });
});
