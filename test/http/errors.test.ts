import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

const expectJsonError = (response: { status: number; body: Record<string, unknown>; headers: Record<string, string> }, status: number, error: string) => {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/application\/json/);
  expect(response.body).toEqual({ error, message: expect.any(String) });
};

describe('malformed requests get JSON errors, never HTML or a 500', () => {
  it('answers malformed JSON with 400', async () => {
    const response = await t.http.post('/api/v1/leads').set(tenant.auth).set('Content-Type', 'application/json').send('{"name": "Jane",');
    expectJsonError(response, 400, 'malformed_json');
  });

  it('answers a non-JSON content type with 415', async () => {
    const response = await t.http.post('/api/v1/leads').set(tenant.auth).set('Content-Type', 'text/plain').send('name=Jane');
    expectJsonError(response, 415, 'unsupported_media_type');
    const form = await t.http.post('/api/v1/leads/batch').set(tenant.auth).type('form').send({ name: 'Jane' });
    expectJsonError(form, 415, 'unsupported_media_type');
  });

  it('answers a body over 1 MiB with 413', async () => {
    const response = await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ name: 'Jane', email: 'j@acme.test', description: 'x'.repeat(1024 * 1024 + 10) });
    expectJsonError(response, 413, 'payload_too_large');
  });

  it('answers a JSON body that is not an object with 422', async () => {
    const response = await t.http.post('/api/v1/leads').set(tenant.auth).set('Content-Type', 'application/json').send('[1,2]');
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ errors: { body: ['The body field must be object.'] } });
  });

  it('answers unknown routes with 404 without an error code', async () => {
    const unknown = [
      ['get', '/api/v1/nope'],
      ['get', '/'],
      ['get', '/api/v2/me'],
      ['delete', '/api/v1/leads/abc'],
      ['get', '/api/v1/me/'],
      ['get', '/API/v1/me'],
      ['get', '/api/v1/leads/%E0%A4%A'],
    ] as const;
    for (const [method, path] of unknown) {
      const response = await t.http[method](path).set(tenant.auth);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(response.headers['content-type']).toMatch(/application\/json/);
      expect(response.body).toEqual({ message: expect.any(String) });
    }
  });

  // Changed by issue 9: a known path with another method was a 404 and is now a 405 with Allow.
  it('answers a known path called with another method with 405, Allow and no error code, before the key is checked', async () => {
    const cases = [
      ['delete', '/api/v1/leads/1', 'GET'],
      ['post', '/api/v1/me', 'GET'],
      ['get', '/api/v1/leads', 'POST'],
      ['get', '/api/v1/leads/batch', 'POST'],
      ['put', '/api/v1/tags', 'GET'],
      ['head', '/api/v1/me', 'GET'],
      ['options', '/api/v1/leads', 'POST'],
    ] as const;
    for (const [method, path, allow] of cases) {
      const response = await t.http[method](path);
      expect({ method, path, status: response.status, allow: response.headers.allow }).toEqual({ method, path, status: 405, allow });
      // A HEAD answer has no body (supertest gives {}); every other one is exactly { message }.
      expect(response.body).toEqual(method === 'head' ? {} : { message: 'This route does not support this method; the Allow header lists the methods it does support.' });
    }
  });

  it('echoes a request id on every response', async () => {
    const generated = await t.http.get('/api/v1/me').set(tenant.auth);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await t.http.get('/api/v1/nope').set('X-Request-Id', 'trace-123');
    expect(echoed.headers['x-request-id']).toBe('trace-123');
  });
});

describe('operator endpoints', () => {
  it('reports liveness and readiness', async () => {
    expect((await t.http.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', database: 'ok' });
  });

  it('serves the OpenAPI document and its rendered reference without a CDN', async () => {
    const document = await t.http.get('/openapi.yaml');
    expect(document.status).toBe(200);
    expect(document.text).toMatch(/^openapi: 3\.1/m);
    const page = await t.http.get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/docs/redoc.standalone.js');
    expect(page.text).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/);
    const bundle = await t.http.get('/docs/redoc.standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.text.length).toBeGreaterThan(100_000);
  });
});
