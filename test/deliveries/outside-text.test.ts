import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, deliveries, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

// Text the service reads from outside (a receiver's reply, a company's web page) is stored
// by the rule the document states for request text: NUL removed, a lone surrogate U+FFFD.
// PostgreSQL refuses NUL in text and in jsonb, so without the rule the worker could not
// record such a reply or analysis.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

let sequence = 0;
const postLead = async (tenant: Tenant, body: object = {}) => {
  const response = await t.http
    .post('/api/v1/leads')
    .set(tenant.auth)
    .send({ name: 'Outside Text', email: `outside${++sequence}@gmail.com`, ...body });
  expect(response.status).toBe(201);
  return response.body.data as { id: number };
};

describe('text from outside the service', () => {
  it('records a receiver reply and the record id it names without NUL', async () => {
    const tenant = await createTenant(t.ctx.db);
    await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`, '--auto-push']);
    // A raw NUL after the JSON, and a record id holding one as an escape.
    receiver.routes['/crm'] = { status: 200, body: '{"id":"crm\\u0000-7"}', headers: { 'content-type': 'application/json' } };
    const withId = await postLead(tenant);
    await drain(t);
    receiver.routes['/crm'] = { status: 200, body: 'accepted\u0000 as is', headers: { 'content-type': 'text/plain' } };
    const withRawNul = await postLead(tenant);
    await drain(t);

    const [first, second] = await deliveries(t, tenant.workspaceId);
    expect([first!.lead_id, first!.branch, second!.lead_id, second!.branch, second!.reply]).toEqual([withId.id, 'Delivered', withRawNul.id, 'Delivered', 'accepted as is']);
    const lead = await t.ctx.db.selectFrom('leads').select('crm_record_id').where('id', '=', withId.id).executeTakeFirstOrThrow();
    expect(lead.crm_record_id).toBe('crm-7');
  });

  it('stores a web page title and description without NUL, and a title clipped inside a surrogate pair with U+FFFD', async () => {
    // A workspace each: both sites are on the receiver's host, which would make them one company.
    const [tenant, other] = [await createTenant(t.ctx.db), await createTenant(t.ctx.db)];
    const html = (head: string) => ({
      status: 200,
      body: `<!doctype html><html><head>${head}</head><body></body></html>`,
      headers: { 'content-type': 'text/html; charset=utf-8' },
    });
    receiver.routes['/nul'] = html('<title>Anvil\u0000 Works</title><meta name="description" content="Anvils\u0000 for coyotes.">');
    const nul = await postLead(tenant, { company: { website: `${receiver.url}/nul` } });
    // 254 characters, then an emoji: clipping the title at 255 characters splits its pair.
    receiver.routes['/clipped'] = html(`<title>${'a'.repeat(254)}😀</title>`);
    const clipped = await postLead(other, { company: { website: `${receiver.url}/clipped` } });
    await drain(t);

    const company = async (who: Tenant, leadId: number) => (await t.http.get(`/api/v1/leads/${leadId}`).set(who.auth)).body.data.company;
    expect(await company(tenant, nul.id)).toMatchObject({ status: 'analyzed', name: 'Anvil Works', description: 'Anvils for coyotes.' });
    expect(await company(other, clipped.id)).toMatchObject({ status: 'analyzed', name: `${'a'.repeat(254)}\ufffd` });
  });
});
