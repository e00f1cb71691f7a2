import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from './support/app.js';
import { createTenant, type Tenant } from './support/fixtures.js';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  tenant = await createTenant(t.ctx.db);
});
afterAll(() => t.close());

const FIELDS = ['name', 'email', 'phone', 'linkedin_url', 'emails', 'phones', 'links', 'job_title', 'description', 'gender', 'language',
  'decision_maker', 'custom_fields', 'location', 'tags', 'tag_ids', 'company', 'on_duplicate', 'create_missing_tags', 'enrich', 'dry_run'];
const WEIRD_VALUES: unknown[] = [null, 0, -1, 1.5, 1e308, '', ' ', 'x'.repeat(5000), true, [], [null], [[]], {}, { a: { b: { c: [] } } },
  '\u0000', '\ud800', '😀'.repeat(300), '<script>alert(1)</script>', "'; DROP TABLE leads; --", ['a@b.co', 42], [{ type: 'website' }], { __proto__: { polluted: true } }];

describe('hostile and malformed input never causes a 5xx', () => {
  it('answers every field set to every odd value with a 2xx or a 4xx JSON body', async () => {
    const failures: string[] = [];
    for (const field of FIELDS) {
      for (const value of WEIRD_VALUES) {
        const body = { name: 'Fuzz', email: 'fuzz@gmail.com', [field]: value };
        const response = await t.http.post('/api/v1/leads').set(tenant.auth).send(body);
        if (response.status >= 500 || typeof response.body !== 'object') failures.push(`${field}=${JSON.stringify(value)?.slice(0, 40)} -> ${response.status}`);
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
