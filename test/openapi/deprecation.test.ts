import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import openapiTS, { astToString } from 'openapi-typescript';
import { contractCopy, deprecate } from '../support/contract-copy.js';
import { startPrism, type PrismProcess } from '../support/prism.js';
import { testBed } from '../support/test-bed.js';

// Deprecation on the wire, on a copy of the document (nothing in the real one is deprecated):
// GET /tags marked `deprecated: true` with its dates, and the lead input's `job_title` and
// `company.industry` marked deprecated. Integrators meet it as headers on every answer of the
// operation (from the service and from the Prism mock alike), as warnings when they send a
// deprecated property, and as `@deprecated` in the types they generate.

const copy = contractCopy((document) => {
  deprecate(['paths', '/api/v1/tags', 'get'], '2026-12-01', '2027-06-30')(document);
  deprecate(['components', 'schemas', 'LeadFields', 'properties', 'job_title'], '2026-12-01', '2027-06-30')(document);
  deprecate(['components', 'schemas', 'CompanyInput', 'properties', 'industry'], '2026-12-01', '2027-09-30')(document);
});
const bed = testBed({ app: { versions: [{ documents: copy }] } });
let prism: PrismProcess | undefined;

const EXPECTED = {
  deprecation: `@${Date.UTC(2026, 11, 1) / 1000}`,
  sunset: 'Wed, 30 Jun 2027 00:00:00 GMT',
  link: '</docs#operation/listTags>; rel="deprecation"',
};
const headersOf = (headers: Record<string, unknown>) => ({ deprecation: headers.deprecation, sunset: headers.sunset, link: headers.link });

beforeAll(async () => {
  prism = await startPrism(['mock'], copy.published);
}, 90_000);
afterAll(() => {
  prism?.stop();
  copy.remove();
});

describe('a deprecated operation', () => {
  it('answers with Deprecation (RFC 9745), Sunset (RFC 8594) and Link rel="deprecation", on success and on error', async () => {
    const [tenant] = bed.tenants;
    const ok = await bed.t.http.get('/api/v1/tags').set(tenant.auth);
    expect(ok.status).toBe(200);
    expect(headersOf(ok.headers)).toEqual(EXPECTED);
    const refused = await bed.t.http.get('/api/v1/tags');
    expect(refused.status).toBe(401);
    expect(headersOf(refused.headers)).toEqual(EXPECTED);
    const other = await bed.t.http.get('/api/v1/me').set(tenant.auth);
    expect(headersOf(other.headers)).toEqual({ deprecation: undefined, sunset: undefined, link: undefined });
  });

  it('gets the same three headers from the Prism mock of the published document', async () => {
    const mocked = await fetch(`${prism!.url}/api/v1/tags`, { headers: bed.tenants[0].auth });
    expect(mocked.status).toBe(200);
    expect({ deprecation: mocked.headers.get('deprecation'), sunset: mocked.headers.get('sunset'), link: mocked.headers.get('link') }).toEqual(EXPECTED);
  });
});

describe('a deprecated property', () => {
  it('sent to POST /leads adds a line to meta.warnings naming it and its sunset; not sent, none', async () => {
    const [tenant] = bed.tenants;
    const sent = await bed.t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ name: 'Ada Lovelace', email: 'ada@example.com', job_title: 'Analyst', company: { name: 'Engines Ltd', industry: 'Computing' } });
    expect(sent.status).toBe(201);
    expect(sent.body.meta.warnings).toEqual([
      'job_title: deprecated and will be ignored or refused after 2027-06-30; see /docs#operation/createLead.',
      'company.industry: deprecated and will be ignored or refused after 2027-09-30; see /docs#operation/createLead.',
    ]);
    const notSent = await bed.t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Grace Hopper', email: 'grace@example.com' });
    expect(notSent.status).toBe(201);
    expect(notSent.body.meta.warnings).toEqual([]);
  });

  it('sent in a batch row adds a line to that row’s warnings only', async () => {
    const [tenant] = bed.tenants;
    const batch = await bed.t.http
      .post('/api/v1/leads/batch')
      .set(tenant.auth)
      .send({
        leads: [
          { name: 'Alan Turing', email: 'alan@example.com' },
          { name: 'Joan Clarke', email: 'joan@example.com', job_title: 'Cryptanalyst' },
        ],
      });
    expect(batch.status).toBe(200);
    expect(batch.body.data.map((row: { warnings: string[] }) => row.warnings)).toEqual([
      [],
      ['job_title: deprecated and will be ignored or refused after 2027-06-30; see /docs#operation/createLeadsBatch.'],
    ]);
  });

  it('is @deprecated in the types generated from the published document', async () => {
    const types = astToString(await openapiTS(new URL(`file://${copy.published}`), { rootTypes: true }));
    expect(types).toMatch(/@deprecated\s*\*\/\s*job_title\?:/);
    expect(types).toMatch(/@deprecated\s*\*\/\s*industry\?:/);
    expect(types).toMatch(/\* List the workspace's tags\s*\* @deprecated\s/);
  });
});
