import { beforeAll, describe, expect, it } from '@jest/globals';
import { extractMetadata } from '../../src/companies/website.js';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const PAGE = '<!doctype html><html><head><title>Anvil Works</title><meta name="description" content="Anvils for every coyote."></head><body>hi</body></html>';
const html = (body: string) => ({ status: 200, body, headers: { 'content-type': 'text/html; charset=utf-8' } });

let sequence = 0;
/** A workspace with an auto-push connector to the receiver. */
async function autoPushWorkspace(): Promise<Tenant> {
  const tenant = await createTenant(t.ctx.db);
  await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`, '--auto-push']);
  return tenant;
}
const post = async (tenant: Tenant, body: object) => {
  const response = await t.http
    .post('/api/v1/leads')
    .set(tenant.auth)
    .send({ name: 'Wile E.', email: `wile${++sequence}@gmail.com`, ...body });
  expect(response.status).toBe(201);
  return response.body.data as { id: number; company: { id: number; status: string; name: string; description: string | null } | null };
};
const readLead = async (tenant: Tenant, id: number) => (await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth)).body.data;
const paths = () => receiver.requests.map((request) => `${request.method} ${request.path}`);

describe('website analysis', () => {
  it('analyzes the site: title names a nameless company, meta description stored, status analyzed; then the lead is auto-pushed', async () => {
    const tenant = await autoPushWorkspace();
    receiver.routes['/site'] = html(PAGE);
    const lead = await post(tenant, { company: { website: `${receiver.url}/site` } });
    expect(lead.company).toMatchObject({ status: 'pending' });

    await drain(t);
    expect(paths()).toEqual(['GET /site', 'POST /crm']);
    expect(receiver.requests[0]!.headers.accept).toMatch(/text\/html/);
    expect((await readLead(tenant, lead.id)).company).toMatchObject({ status: 'analyzed', name: 'Anvil Works', description: 'Anvils for every coyote.' });
    expect(JSON.parse(receiver.requests[1]!.body)).toMatchObject({ event: 'lead', lead_id: lead.id, company: 'Anvil Works' });
  });

  it('keeps the payload description and name over what the site says', async () => {
    const tenant = await autoPushWorkspace();
    receiver.routes['/named'] = html(PAGE);
    const lead = await post(tenant, { company: { name: 'ACME Corp', website: `${receiver.url}/named`, description: 'From the payload' } });
    await drain(t);
    expect((await readLead(tenant, lead.id)).company).toMatchObject({ status: 'analyzed', name: 'ACME Corp', description: 'From the payload' });
  });

  it('marks the company failed when the site is not an analyzable HTML page, keeping the payload description; the lead is still pushed', async () => {
    const tenant = await autoPushWorkspace();
    receiver.routes['/missing'] = { status: 404, body: 'nope' };
    const missing = await post(tenant, { company: { website: `${receiver.url}/missing`, description: 'Kept' } });
    await drain(t);
    expect((await readLead(tenant, missing.id)).company).toMatchObject({ status: 'failed', description: 'Kept' });
    expect(paths()).toEqual(['GET /missing', 'POST /crm']);

    const other = await autoPushWorkspace();
    receiver.routes['/json'] = { status: 200, body: '{}', headers: { 'content-type': 'application/json' } };
    const json = await post(other, { company: { website: `${receiver.url}/json` } });
    await drain(t);
    expect((await readLead(other, json.id)).company).toMatchObject({ status: 'failed', description: null });
  });

  it('follows a site redirect (each hop checked) and refuses private addresses without the switch', async () => {
    const tenant = await autoPushWorkspace();
    receiver.routes['/old'] = { status: 301, headers: { location: '/new' } };
    receiver.routes['/new'] = html(PAGE);
    const lead = await post(tenant, { company: { website: `${receiver.url}/old` } });
    await drain(t);
    expect((await readLead(tenant, lead.id)).company).toMatchObject({ status: 'analyzed' });

    receiver.reset();
    const strict = await createTenant(t.ctx.db);
    const refused = await post(strict, { company: { website: `${receiver.url}/site` } });
    const { WorkerContext } = await import('../../src/worker/context.js');
    await new WorkerContext({ ...t.ctx, config: { ...t.ctx.config, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: false } }).processAll();
    expect((await readLead(strict, refused.id)).company).toMatchObject({ status: 'failed' });
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses a redirect to the cloud metadata address even with private networks allowed', async () => {
    const tenant = await autoPushWorkspace();
    receiver.routes['/to-metadata'] = { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } };
    const lead = await post(tenant, { company: { website: `${receiver.url}/to-metadata` } });
    await drain(t);
    expect((await readLead(tenant, lead.id)).company).toMatchObject({ status: 'failed' });
    expect(paths()).toEqual(['GET /to-metadata', 'POST /crm']);
    const analysis = await t.ctx.db
      .selectFrom('outbox')
      .select('last_error')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('topic', '=', 'company.analyze')
      .executeTakeFirstOrThrow();
    expect(analysis.last_error).toBe('refused: Cloud metadata hosts are always refused.');
  });

  it('a lead with nothing to analyze is pushed at once; enrich false leaves the company not_analyzed', async () => {
    const tenant = await autoPushWorkspace();
    await post(tenant, {});
    const unenriched = await post(tenant, { company: { website: `${receiver.url}/never` }, enrich: false });
    expect(unenriched.company).toMatchObject({ status: 'not_analyzed' });
    await drain(t);
    expect(paths()).toEqual(['POST /crm', 'POST /crm']);
  });

  it('auto-push is off by default', async () => {
    const tenant = await createTenant(t.ctx.db);
    await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    await post(tenant, {});
    await drain(t);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('website metadata', () => {
  it('reads the title and the meta description, falling back to Open Graph', () => {
    expect(extractMetadata('<html><head><title> Acme &amp; Co \n</title><meta name="Description" content="We make anvils."></head></html>')).toEqual({
      title: 'Acme & Co',
      description: 'We make anvils.',
    });
    expect(extractMetadata('<head><meta property="og:title" content="Acme"><meta property="og:description" content="Anvils, fast."></head>')).toEqual({
      title: 'Acme',
      description: 'Anvils, fast.',
    });
    expect(extractMetadata('not html at all')).toEqual({ title: null, description: null });
  });
});
