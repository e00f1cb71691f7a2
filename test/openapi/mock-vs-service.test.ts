import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { insertTag } from '../../src/tags/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { contractDocument, documentedResponse, ROUTING_ERROR_SCHEMA, schemaProblems } from '../support/contract-document.js';
import type { Tenant } from '../support/fixtures.js';
import { serveApp, unreachableDatabaseUrl } from '../support/served-app.js';
import { fetchCheckedAgainstDocument } from '../support/document-check.js';
import { startPrism, type PrismProcess } from '../support/prism.js';

// Partners mock the contract with Prism (`npm run mock`) before they call the service. The
// same requests go to both here; wherever a schema can say what happens, both must answer
// the same status with the same body shape, and both bodies must match the document.
//
// What a mock cannot reproduce (each asserted below as it differs, so the list stays true):
// - token validity: any well-formed `Bearer` token passes the mock;
// - scopes (403), rate limits (429), duplicates (409 duplicate_lead), Idempotency-Key replays
//   and reuse (409), stored data and the existence of referenced rows (unknown tag_ids,
//   foreign company.id): the mock has no state, it answers examples;
// - unknown query parameters: Prism ignores them and answers 2xx;
// - an empty or over-long Idempotency-Key on a valid body: Prism answers every invalid
//   request with the operation's 422 example, the service with 400 invalid_idempotency_key;
// - malformed JSON: same 400, but Prism's HTTP layer sends its own `{"error":{"code":"invalid_json",...}}`;
// - a body over 1 MiB: Prism accepts up to 10 MB and answers the schema's 422, the service 413;
// - unknown routes and other methods: same 404 / 405, but Prism's own problem+json body and no `Allow`;
// - a lead id that is not a positive integer: the service's unknown-route / not_found 404, the mock's 422;
// - a database outage: the service's 503 with Retry-After; the mock has no database and
//   answers 503 only when asked with `Prefer: code=503` (then the same body and Retry-After).

const MOCK_TOKEN = 'lk7f3a9c2e1b_3xQ9vN2kT7wLp4sR8mY1cZ6bH0dF5gJ2aK9eU3iO7qW';
const JSON_TYPE = { 'Content-Type': 'application/json' };

// The documented examples say http://localhost:3000; so does this service's PUBLIC_URL.
const bed = testBed({ app: { env: { PUBLIC_URL: 'http://localhost:3000', RATE_LIMIT_PER_MINUTE: '100000' } } });
let prism: PrismProcess | undefined;
let mockBase: string;
let serviceBase: string;
let t: TestApp;
let tenant: Tenant;
let leadId: number;

beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  prism = await startPrism(['mock']);
  mockBase = prism.url;
  serviceBase = await t.listen();
  await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Conference 2026', color: '#1f77b4', active: true });
  const lead = await t.http
    .post('/api/v1/leads')
    .set(tenant.auth)
    .send({
      name: 'Jane Doe',
      email: 'jane.doe@acme-robotics.com',
      phone: '+1 (415) 555-0123',
      linkedin_url: 'https://www.linkedin.com/in/jane-doe/',
      job_title: 'VP Marketing',
      description: 'Met at the booth.',
      gender: 'female',
      language: 'en',
      decision_maker: true,
      location: { country: 'US', state: 'CA', city: 'San Francisco', address: '500 Howard St', zip_code: '94105' },
      tags: ['Conference 2026'],
      custom_fields: { 'Lead Score Source': 'webinar' },
      enrich: false,
      company: {
        name: 'Acme Robotics',
        website: 'https://acme-robotics.com',
        linkedin_url: 'https://www.linkedin.com/company/acme-robotics',
        industry: 'Robots',
        size: '51-200',
        description: 'Arms.',
      },
    });
  leadId = lead.body.data.id;
}, 90_000);
afterAll(() => {
  prism?.stop();
});

interface Sent {
  status: number;
  body: unknown;
  headers: Headers;
}
interface Request {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  auth?: boolean;
}

async function send(base: string, token: string, request: Request): Promise<Sent> {
  const headers = { ...(request.auth === false ? {} : { Authorization: `Bearer ${token}` }), ...request.headers };
  // Only the service's answers must match the document: Prism's differ where the tests below say.
  const response = await (base === serviceBase ? fetchCheckedAgainstDocument : fetch)(`${base}${request.path}`, { method: request.method, headers, body: request.body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
}
const both = (request: Request) => Promise.all([send(mockBase, MOCK_TOKEN, request), send(serviceBase, tenant.token, request)]);

/** Differences of keys and value types; null matches any type (nullability is the schema's job), free-keyed maps compare values only. */
function shapeDifferences(a: unknown, b: unknown, where = 'body'): string[] {
  if (a === null || b === null) return [];
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return [`${where}: array vs ${typeof (Array.isArray(a) ? b : a)}`];
    return a.length > 0 && b.length > 0 ? shapeDifferences(a[0], b[0], `${where}[0]`) : [];
  }
  if (typeof a !== typeof b) return [`${where}: ${typeof a} vs ${typeof b}`];
  if (typeof a !== 'object') return [];
  const [x, y] = [a as Record<string, unknown>, b as Record<string, unknown>];
  if (where.endsWith('.errors') || where.endsWith('.custom_fields')) {
    return shapeDifferences(Object.values(x)[0] ?? null, Object.values(y)[0] ?? null, `${where}[*]`);
  }
  const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
  return keys.flatMap((key) => (key in x && key in y ? shapeDifferences(x[key], y[key], `${where}.${key}`) : [`${where}.${key}: only in ${key in x ? 'mock' : 'service'}`]));
}

const lead = JSON.stringify({ name: 'Jane Doe', email: 'jane@acme-robotics.com' });

describe('the Prism mock and the service answer alike wherever the document can say so', () => {
  // [case, request, documented path, exact: the service body equals the mock's (first) example]
  const same: Array<[string, Request, string, boolean]> = [
    ['GET /me', { method: 'GET', path: '/api/v1/me' }, '/api/v1/me', false],
    ['GET /tags', { method: 'GET', path: '/api/v1/tags' }, '/api/v1/tags', false],
    ['GET /leads/{id}', { method: 'GET', path: '/api/v1/leads/{lead}' }, '/api/v1/leads/{id}', false],
    [
      'POST /leads (created)',
      { method: 'POST', path: '/api/v1/leads', headers: { ...JSON_TYPE, Prefer: 'code=201' }, body: JSON.stringify({ name: 'New Person', email: 'new.person@acme-robotics.com' }) },
      '/api/v1/leads',
      false,
    ],
    [
      'POST /leads/batch',
      { method: 'POST', path: '/api/v1/leads/batch', headers: JSON_TYPE, body: JSON.stringify({ leads: [{ name: 'Row', phone: '+1 415 555 0177' }] }) },
      '/api/v1/leads/batch',
      false,
    ],
    ['missing Authorization', { method: 'GET', path: '/api/v1/me', auth: false }, '/api/v1/me', true],
    ['wrong content type', { method: 'POST', path: '/api/v1/leads', headers: { 'Content-Type': 'text/plain' }, body: 'name=Jane' }, '/api/v1/leads', true],
    ['missing contact detail', { method: 'POST', path: '/api/v1/leads', headers: JSON_TYPE, body: JSON.stringify({ name: 'Jane Doe' }) }, '/api/v1/leads', true],
    [
      'missing contact detail in a batch row',
      { method: 'POST', path: '/api/v1/leads/batch', headers: JSON_TYPE, body: JSON.stringify({ leads: [{ name: 'Jane Doe' }] }) },
      '/api/v1/leads/batch',
      false,
    ],
    // The published document spells the bodies out with additionalProperties: false, which
    // Prism enforces (it ignored the source's unevaluatedProperties).
    [
      'unknown body field',
      { method: 'POST', path: '/api/v1/leads', headers: JSON_TYPE, body: JSON.stringify({ name: 'Jane Doe', email: 'jane@acme.com', nickname: 'JD' }) },
      '/api/v1/leads',
      false,
    ],
    [
      'unknown field in a batch row',
      { method: 'POST', path: '/api/v1/leads/batch', headers: JSON_TYPE, body: JSON.stringify({ leads: [{ name: 'Jane Doe', email: 'jane@acme.com', nickname: 'JD' }] }) },
      '/api/v1/leads/batch',
      false,
    ],
    ['bad include_archived', { method: 'GET', path: '/api/v1/tags?include_archived=maybe' }, '/api/v1/tags', true],
  ];

  it.each(same)('%s: same status, same body shape, both bodies match the document', async (_name, request, documentedPath, exact) => {
    const [mock, service] = await both({ ...request, path: request.path.replace('{lead}', String(leadId)) });
    expect(service.status).toBe(mock.status);
    expect(shapeDifferences(mock.body, service.body)).toEqual([]);
    const { schemaPointer } = documentedResponse(documentedPath, request.method.toLowerCase(), service.status);
    expect({ mock: schemaProblems(schemaPointer, mock.body), service: schemaProblems(schemaPointer, service.body) }).toEqual({ mock: [], service: [] });
    // Where the document has one example for the case the bodies are equal; elsewhere they differ.
    expect({ equalBodies: isDeepStrictEqual(service.body, mock.body) }).toEqual({ equalBodies: exact });
  });
});

describe('where a mock cannot behave like the service, the difference is the documented one', () => {
  const example = (documentedPath: string, method: string, status: number, name: string) => documentedResponse(documentedPath, method, status).examples[name];
  /** The service answered `status` with the document's example `name` of that answer. */
  const expectExample = (answer: { status: number; body: unknown }, documentedPath: string, method: string, status: number, name: string) =>
    expect({ status: answer.status, body: answer.body }).toEqual({ status, body: example(documentedPath, method, status, name) });

  it('malformed JSON: 400 from both; the service sends the documented malformed_json body, Prism its own', async () => {
    const [mock, service] = await both({ method: 'POST', path: '/api/v1/leads', headers: JSON_TYPE, body: '{"name": "Jane",' });
    expect([mock.status, service.status]).toEqual([400, 400]);
    expect(service.body).toEqual(example('/api/v1/leads', 'post', 400, 'malformedJson'));
    expect(mock.body).toEqual({ error: { code: 'invalid_json', message: expect.any(String) } });
  });

  it('an unknown query parameter: 422 from the service, ignored by the mock', async () => {
    const [mock, service] = await both({ method: 'GET', path: '/api/v1/me?page=2' });
    expectExample(service, '/api/v1/me', 'get', 422, 'unknownQueryParameter');
    expect(mock.status).toBe(200);
  });

  it('an over-long Idempotency-Key on a valid body: 400 invalid_idempotency_key from the service, the 422 example from the mock', async () => {
    const [mock, service] = await both({ method: 'POST', path: '/api/v1/leads', headers: { ...JSON_TYPE, 'Idempotency-Key': 'k'.repeat(256) }, body: lead });
    expectExample(service, '/api/v1/leads', 'post', 400, 'invalidIdempotencyKey');
    expect(mock.status).toBe(422);
  });

  it("a body over 1 MiB: 413 from the service, the schema's 422 from the mock", async () => {
    const body = JSON.stringify({ name: 'Jane Doe', email: 'jane@acme.com', description: 'x'.repeat(1024 * 1024) });
    const [mock, service] = await both({ method: 'POST', path: '/api/v1/leads', headers: JSON_TYPE, body });
    expectExample(service, '/api/v1/leads', 'post', 413, 'payloadTooLarge');
    expect(mock.status).toBe(422);
  });

  it('another method on a known path: 405 from both; the service sends { message } and Allow, Prism its own body', async () => {
    const [mock, service] = await both({ method: 'DELETE', path: '/api/v1/me' });
    expect([mock.status, service.status]).toEqual([405, 405]);
    expect(service.body).toEqual(example('/api/v1/me', 'get', 405, 'methodNotAllowed'));
    expect(service.headers.get('allow')).toBe('GET');
    expect(mock.body).toMatchObject({ status: 405, title: expect.any(String) });
  });

  it('an unknown route: 404 from both; the service sends { message } without error, Prism its own body', async () => {
    const [mock, service] = await both({ method: 'GET', path: '/api/v1/nope' });
    expect([mock.status, service.status]).toEqual([404, 404]);
    expect(schemaProblems(ROUTING_ERROR_SCHEMA, service.body)).toEqual([]);
    expect(mock.body).toMatchObject({ status: 404, title: expect.any(String) });
  });

  it("a lead id that is not a positive integer: the service's 404, the mock's 422", async () => {
    const [mock, service] = await both({ method: 'GET', path: '/api/v1/leads/abc' });
    expectExample(service, '/api/v1/leads/{id}', 'get', 404, 'unknownRoute');
    expect(mock.status).toBe(422);
  });

  it('a database outage: 503 with Retry-After from the service; the mock answers it only when asked with Prefer: code=503', async () => {
    const down = await serveApp({ databaseUrl: await unreachableDatabaseUrl() });
    try {
      const request = { method: 'GET', path: '/api/v1/me' };
      const service = await send(down.url, tenant.token, request);
      const [mock, asked] = await Promise.all([send(mockBase, MOCK_TOKEN, request), send(mockBase, MOCK_TOKEN, { ...request, headers: { Prefer: 'code=503' } })]);
      expect(service.status).toBe(503);
      expect(service.body).toEqual(example('/api/v1/me', 'get', 503, 'serviceUnavailable'));
      expect(service.headers.get('retry-after')).toBe('5');
      expect(mock.status).toBe(200);
      expect({ status: asked.status, body: asked.body, retryAfter: asked.headers.get('retry-after') }).toEqual({ status: 503, body: service.body, retryAfter: '5' });
    } finally {
      await down.close();
    }
  });

  it('token validity: an unknown key is 401 from the service and accepted by the mock', async () => {
    const request = { method: 'GET', path: '/api/v1/me', auth: false, headers: { Authorization: `Bearer ${MOCK_TOKEN}` } };
    const [mock, service] = await both(request);
    expectExample(service, '/api/v1/me', 'get', 401, 'invalid');
    expect(mock.status).toBe(200);
  });
});

describe('Prefer headers select every documented answer of the mock (README, "Mocking with Prism")', () => {
  const valid: Record<string, Request> = {
    getMe: { method: 'GET', path: '/api/v1/me' },
    listTags: { method: 'GET', path: '/api/v1/tags' },
    getLead: { method: 'GET', path: '/api/v1/leads/4211' },
    createLead: { method: 'POST', path: '/api/v1/leads', headers: JSON_TYPE, body: lead },
    createLeadsBatch: { method: 'POST', path: '/api/v1/leads/batch', headers: JSON_TYPE, body: JSON.stringify({ leads: [JSON.parse(lead)] }) },
  };
  const selections = Object.entries(contractDocument.paths).flatMap(([documentedPath, item]) =>
    Object.entries(item).flatMap(([method, operation]) =>
      Object.keys(operation.responses).flatMap((status) =>
        Object.keys(documentedResponse(documentedPath, method, Number(status)).examples).map((name) => [operation.operationId, Number(status), name] as const),
      ),
    ),
  );

  it('documents an example for every answer', () => {
    expect(selections.length).toBeGreaterThan(40);
  });

  it.each(selections)('%s: Prefer: code=%i, example=%s', async (operationId, status, name) => {
    const request = valid[operationId]!;
    const documentedPath = Object.entries(contractDocument.paths).find(([, item]) => Object.values(item).some((operation) => operation.operationId === operationId))![0];
    const response = await send(mockBase, MOCK_TOKEN, { ...request, headers: { ...request.headers, Prefer: `code=${status}, example=${name}` } });
    const { examples, schemaPointer } = documentedResponse(documentedPath, request.method.toLowerCase(), status);
    expect(response.status).toBe(status);
    expect(response.body).toEqual(examples[name]);
    expect(schemaProblems(schemaPointer, response.body)).toEqual([]);
  });
});
