import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';

const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '100000' } } });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

const FIELDS = [
  'name',
  'email',
  'phone',
  'linkedin_url',
  'emails',
  'phones',
  'links',
  'job_title',
  'description',
  'gender',
  'language',
  'decision_maker',
  'custom_fields',
  'location',
  'tags',
  'tag_ids',
  'company',
  'on_duplicate',
  'create_missing_tags',
  'enrich',
  'dry_run',
];
const WEIRD_VALUES: unknown[] = [
  null,
  0,
  -1,
  1.5,
  1e308,
  '',
  ' ',
  'x'.repeat(5000),
  true,
  [],
  [null],
  [[]],
  {},
  { a: { b: { c: [] } } },
  '\u0000',
  '\ud800',
  '😀'.repeat(300),
  '<script>alert(1)</script>',
  "'; DROP TABLE leads; --",
  ['a@b.co', 42],
  [{ type: 'website' }],
];
// Sent as raw JSON text: a JavaScript object literal would swallow `__proto__` before sending.
const WEIRD_JSON: string[] = [
  ...WEIRD_VALUES.map((value) => JSON.stringify(value)),
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"":1}',
  '[{"__proto__":1}]',
  '{"a":{"__proto__":[]}}',
];

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
          if (response.status >= 500 || !/^application\/json/.test(response.headers['content-type'] ?? ''))
            failures.push(`${sent} -> ${response.status} ${response.headers['content-type']}`);
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
      const batch = await t.http
        .post('/api/v1/leads/batch')
        .set(tenant.auth)
        .send({ leads: [payload, payload] });
      expect({ payload, status: batch.status < 500 }).toEqual({ payload, status: true });
    }
    for (const body of [null, 42, 'string', [], { leads: null }, { leads: [null] }, { leads: [[]] }, { leads: 'x' }]) {
      const response = await t.http.post('/api/v1/leads/batch').set(tenant.auth).set('Content-Type', 'application/json').send(JSON.stringify(body));
      expect({ body, status: response.status }).toEqual({ body, status: 422 });
    }
  });
});

describe('validation messages', () => {
  const raw = (json: string, path = '/api/v1/leads') => t.http.post(path).set(tenant.auth).set('Content-Type', 'application/json').send(json);

  it('reports a wrong field inside a lead without calling every other field "not allowed"', async () => {
    expect((await raw(`{"name":"x","email":"not-an-email"}`)).body).toEqual({ errors: { email: ['The email field must be a valid email address.'] } });
    expect((await raw(`{"email":"x@gmail.com"}`)).body).toEqual({ errors: { name: ['The name field is required.'] } });
    expect((await raw(`{"name":"x","emails":[]}`)).body).toEqual({ errors: { email: ['The email field is required when none of phone / linkedin_url are present.'] } });
  });
});
