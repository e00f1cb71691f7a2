import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

// Keys of client input and of operator configuration end up as keys of JavaScript objects:
// `__proto__`, `constructor`, `prototype` and `""` must stay plain data (or be dropped with a
// warning), never reach Object.prototype, never answer 5xx. Bodies are sent as raw JSON text,
// since a JavaScript object literal would already have swallowed `__proto__`.

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

const postRaw = (path: string, raw: string) => t.http.post(`/api/v1${path}`).set(tenant.auth).set('Content-Type', 'application/json').send(raw);
const getLead = async (id: number) => JSON.parse((await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth)).text).data;
const prototypeIsClean = () => expect(Object.keys(Object.prototype)).toEqual([]);

describe('custom_fields keys over HTTP', () => {
  it('POST /leads stores __proto__, constructor and prototype keys as data and drops "" with a warning', async () => {
    const response = await postRaw(
      '/leads',
      '{"name":"A","email":"a@acme.io","custom_fields":{"__proto__":"x","constructor":"y","":"z","Prototype":"p","nested":{"__proto__":{"polluted":true}}}}',
    );
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(response.text);
    expect(body.data.custom_fields).toEqual({ proto: 'x', constructor: 'y', prototype: 'p' });
    expect(body.meta.warnings).toEqual([
      'custom_fields: the key "" has no letters or digits and was dropped.',
      'custom_fields.nested: objects and arrays are not stored; the value was dropped.',
    ]);
    expect((await getLead(body.data.id)).custom_fields).toEqual({ proto: 'x', constructor: 'y', prototype: 'p' });

    const update = await postRaw('/leads', '{"name":"A","email":"a@acme.io","custom_fields":{"constructor":"changed","__proto__":{"polluted":true}}}');
    expect(update.status).toBe(200);
    expect(JSON.parse(update.text).data.custom_fields).toEqual({ proto: 'x', constructor: 'changed', prototype: 'p' });
    prototypeIsClean();
  });

  it('POST /leads/batch stores them the same way', async () => {
    const response = await postRaw('/leads/batch', '{"leads":[{"name":"B","email":"b@acme.io","custom_fields":{"__proto__":"x","constructor":"y","":"z"}}]}');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const [row] = JSON.parse(response.text).data;
    expect(row).toMatchObject({ status: 'created', warnings: ['custom_fields: the key "" has no letters or digits and was dropped.'] });
    expect((await getLead(row.lead_id)).custom_fields).toEqual({ proto: 'x', constructor: 'y' });
    prototypeIsClean();
  });
});

describe('connector and workflow keys from the CLI', () => {
  it('refuses a mapping from an Object.prototype member as an unknown lead attribute', async () => {
    for (const attribute of ['__proto__', 'constructor', 'toString']) {
      const refused = await cliRefused(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`, '--map', `${attribute}=x`]);
      expect(refused).toMatchObject({ error: 'invalid_argument', message: expect.stringContaining(`unknown lead attribute "${attribute}"`) });
    }
  });

  it('sends receiver keys, constant fields and headers named like prototype members as plain keys', async () => {
    const connector = await cli(t, [
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      `${receiver.url}/crm`,
      '--map',
      'name=__proto__',
      '--map',
      'email=prototype',
      '--map',
      'custom_fields.constructor=cf',
      '--field',
      'constructor=y',
      '--field',
      '__proto__=overridden',
      '--header',
      '__proto__=z',
      '--header',
      'constructor=v',
    ]);
    expect(connector.warnings).toEqual(['--header __proto__: __proto__ cannot be sent as a header name; it is not sent.']);
    const lead = JSON.parse((await postRaw('/leads', '{"name":"Ada","email":"ada@engines.test","enrich":false}')).text).data;

    const push = await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(lead.id)]);
    expect(push).toMatchObject({ delivered: true, status: 200 });
    const request = receiver.requests.at(-1)!;
    const body = JSON.parse(request.body);
    expect(Object.keys(body).sort()).toEqual(['__proto__', 'cf', 'constructor', 'event', 'lead_id', 'prototype', 'sent_at']);
    expect(body).toMatchObject({ constructor: 'y', prototype: 'ada@engines.test', cf: null, event: 'lead', lead_id: lead.id });
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).toBe('Ada');
    expect(request.headers.constructor).toBe('v');
    expect(Object.hasOwn(request.headers, '__proto__')).toBe(false);
    prototypeIsClean();
  });

  it('sends Custom URL block fields named like prototype members as plain keys', async () => {
    const workspace = await createTenant(t.ctx.db);
    const workflow = await cli(t, [
      'workflow',
      'create',
      '--workspace',
      String(workspace.workspaceId),
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/hook`,
      '--field',
      '__proto__={{lead.name}}',
      '--field',
      'constructor=c',
      '--field',
      'hasOwnProperty=h',
      '--header',
      '__proto__=z',
    ]);
    expect(workflow.warnings).toEqual(['--header __proto__: __proto__ cannot be sent as a header name; it is not sent.']);
    const created = await t.http.post('/api/v1/leads').set(workspace.auth).send({ name: 'Grace', email: 'grace@navy.test', enrich: false });
    expect(created.status).toBe(201);
    await drain(t);
    const body = JSON.parse(receiver.requests.at(-1)!.body);
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).toBe('Grace');
    expect(body).toMatchObject({ constructor: 'c', hasOwnProperty: 'h', event: 'workflow', workflow_id: workflow.id });
    prototypeIsClean();
  });
});

// Keys sent by the client become keys of error maps and stored objects: none may reach an
// object prototype. Sent as raw JSON, since a JavaScript object literal would not carry them.
describe('keys of lead payloads and query strings over HTTP', () => {
  const raw = (json: string, path = '/leads') => postRaw(path, json);
  const person = '"name":"Proto","email":"proto@gmail.com"';

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('rejects a top-level %s field with the usual 422 naming it', async (key) => {
    for (const response of [await raw(`{${person},"${key}":{"x":1}}`), await raw(`{"leads":[{${person},"${key}":1}]}`, '/leads/batch')]) {
      expect(response.status).toBe(422);
      const [field] = Object.keys(response.body.errors);
      expect(field?.endsWith(key)).toBe(true);
      expect(response.body.errors[field!]).toEqual([`The ${key} field is not allowed.`]);
    }
  });

  it('rejects such keys inside company, location and links, and on the batch envelope', async () => {
    const company = await raw(`{${person},"company":{"name":"Acme","__proto__":{"x":1},"constructor":1}}`);
    expect(company.status).toBe(422);
    expect(Object.keys(company.body.errors).sort()).toEqual(['company.__proto__', 'company.constructor']);
    const location = await raw(`{${person},"location":{"__proto__":{"city":"x"}}}`);
    expect(location.body.errors).toEqual({ 'location.__proto__': ['The __proto__ field is not allowed.'] });
    const links = await raw(`{${person},"links":[{"type":"website","url":"https://a.example","constructor":1}]}`);
    expect(links.body.errors).toEqual({ 'links.0.constructor': ['The constructor field is not allowed.'] });
    const envelope = await raw(`{"leads":[{${person}}],"__proto__":{"dry_run":true}}`, '/leads/batch');
    expect(Object.entries(envelope.body.errors)).toEqual([['__proto__', ['The __proto__ field is not allowed.']]]);
  });

  it('keeps such keys in custom_fields as data (objects and "" dropped with a warning)', async () => {
    const response = await raw(`{"name":"Proto","email":"proto-custom@gmail.com","custom_fields":{"__proto__":{"x":1},"constructor":"c","":"empty","toString":"t"}}`);
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body.data.custom_fields).toEqual({ constructor: 'c', tostring: 't' });
    expect(response.body.meta.warnings).toEqual([
      'custom_fields.proto: objects and arrays are not stored; the value was dropped.',
      'custom_fields: the key "" has no letters or digits and was dropped.',
    ]);
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it('names a field whose name is empty as (empty), under its parent', async () => {
    const top = await raw(`{${person},"":1}`);
    expect(top.body).toEqual({ errors: { '(empty)': ['A field with an empty name is not allowed.'] } });
    const nested = await raw(`{${person},"company":{"name":"Acme","":2}}`);
    expect(nested.body).toEqual({ errors: { 'company.(empty)': ['A field with an empty name is not allowed.'] } });
    const row = await raw(`{"leads":[{${person}},{${person},"":3}]}`, '/leads/batch');
    expect(row.body).toEqual({ errors: { 'leads.1.(empty)': ['A field with an empty name is not allowed.'] } });
  });

  it('rejects hostile and empty query parameter names with the usual 422', async () => {
    const response = await t.http.get('/api/v1/me?__proto__=1&constructor=2&=3&page=4').set(tenant.auth);
    expect(response.status).toBe(422);
    expect(Object.entries(response.body.errors)).toEqual([
      ['__proto__', ['The __proto__ query parameter is not allowed.']],
      ['constructor', ['The constructor query parameter is not allowed.']],
      ['(empty)', ['A query parameter with an empty name is not allowed.']],
      ['page', ['The page query parameter is not allowed.']],
    ]);
  });
});
