import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from './support/app.js';
import { testBed } from './support/test-bed.js';
import type { Tenant } from './support/fixtures.js';

const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '100000' } } });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => { ({ t, tenants: [tenant] } = bed); });

const FIELDS = ['name', 'email', 'phone', 'linkedin_url', 'emails', 'phones', 'links', 'job_title', 'description', 'gender', 'language',
  'decision_maker', 'custom_fields', 'location', 'tags', 'tag_ids', 'company', 'on_duplicate', 'create_missing_tags', 'enrich', 'dry_run'];
const WEIRD_VALUES: unknown[] = [null, 0, -1, 1.5, 1e308, '', ' ', 'x'.repeat(5000), true, [], [null], [[]], {}, { a: { b: { c: [] } } },
  '\u0000', '\ud800', '😀'.repeat(300), '<script>alert(1)</script>', "'; DROP TABLE leads; --", ['a@b.co', 42], [{ type: 'website' }]];
// Sent as raw JSON text: a JavaScript object literal would swallow `__proto__` before sending.
const WEIRD_JSON: string[] = [...WEIRD_VALUES.map((value) => JSON.stringify(value)),
  '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '{"":1}', '[{"__proto__":1}]', '{"a":{"__proto__":[]}}'];

describe('hostile and malformed input never causes a 5xx', () => {
  it('answers every field set to every odd value with a 2xx or a 4xx JSON body', async () => {
    const failures: string[] = [];
    for (const field of FIELDS) {
      for (const json of WEIRD_JSON) {
        const raw = `{"name":"Fuzz","email":"fuzz@gmail.com","${field}":${json}}`;
        const sent = `${field}=${json.slice(0, 40)}`;
        try {
          // The test client also checks status, content type and body against the document.
          const response = await t.http.post('/api/v1/leads').set(tenant.auth).set('Content-Type', 'application/json').send(raw);
          if (response.status >= 500 || !/^application\/json/.test(response.headers['content-type'] ?? '')) failures.push(`${sent} -> ${response.status} ${response.headers['content-type']}`);
        } catch (error) {
          failures.push(`${sent}: ${(error as Error).message}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('survives odd values inside nested objects and batch rows', async () => {
    const payloads: object[] = [
      { name: 'n', email: 'n@gmail.com', company: { id: 1.5 } },
      { name: 'n', email: 'n@gmail.com', company: { name: '', website: 'javascript:alert(1)' } },
      { name: 'n', email: 'n@gmail.com', location: { country: { nested: true } } },
      { name: 'n', email: 'n@gmail.com', links: [{ type: 'website', url: 'http://[::1' }] },
      { name: 'n', email: 'n@gmail.com', custom_fields: { '': 'empty key', '💥': 'emoji key', constructor: 'x', __proto__: 'y' } },
      { name: 'n', linkedin_url: 'https://linkedin.com/in/%E0%A4%A' },
      { name: 'n', phone: '+'.repeat(40) },
      { name: 'n', email: 'n@gmail.com', tags: ['a', 'A', ' a '] },
    ];
    for (const payload of payloads) {
      const single = await t.http.post('/api/v1/leads').set(tenant.auth).send(payload);
      expect({ payload, status: single.status < 500 }).toEqual({ payload, status: true });
      const batch = await t.http.post('/api/v1/leads/batch').set(tenant.auth).send({ leads: [payload, payload] });
      expect({ payload, status: batch.status < 500 }).toEqual({ payload, status: true });
    }
    for (const body of [null, 42, 'string', [], { leads: null }, { leads: [null] }, { leads: [[]] }, { leads: 'x' }]) {
      const response = await t.http.post('/api/v1/leads/batch').set(tenant.auth).set('Content-Type', 'application/json').send(JSON.stringify(body));
      expect({ body, status: response.status }).toEqual({ body, status: 422 });
    }
  });
});

// Keys sent by the client become keys of error maps and stored objects: none may reach an
// object prototype. Sent as raw JSON, since a JavaScript object literal would not carry them.
describe('hostile keys never reach an object prototype', () => {
  const raw = (json: string, path = '/api/v1/leads') => t.http.post(path).set(tenant.auth).set('Content-Type', 'application/json').send(json);
  const person = '"name":"Proto","email":"proto@gmail.com"';

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('rejects a top-level %s field with the usual 422 naming it', async (key) => {
    for (const response of [await raw(`{${person},"${key}":{"x":1}}`), await raw(`{"leads":[{${person},"${key}":1}]}`, '/api/v1/leads/batch')]) {
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
    const envelope = await raw(`{"leads":[{${person}}],"__proto__":{"dry_run":true}}`, '/api/v1/leads/batch');
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
    const row = await raw(`{"leads":[{${person}},{${person},"":3}]}`, '/api/v1/leads/batch');
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

  it('reports a wrong field inside a lead without calling every other field "not allowed"', async () => {
    expect((await raw(`{"name":"x","email":"not-an-email"}`)).body).toEqual({ errors: { email: ['The email field must be a valid email address.'] } });
    expect((await raw(`{"email":"x@gmail.com"}`)).body).toEqual({ errors: { name: ['The name field is required.'] } });
    expect((await raw(`{"name":"x","emails":[]}`)).body).toEqual({ errors: { email: ['The email field is required when none of phone / linkedin_url are present.'] } });
  });
});
