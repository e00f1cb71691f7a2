import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from './support/app.js';
import { createTenant, type Tenant } from './support/fixtures.js';

let t: TestApp;
let tenant: Tenant;

beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t.ctx.db);
});
afterAll(() => t.close());

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
    const response = await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Jane', email: 'j@acme.test', description: 'x'.repeat(1024 * 1024 + 10) });
    expectJsonError(response, 413, 'payload_too_large');
  });

  it('answers a JSON body that is not an object with 422', async () => {
    const response = await t.http.post('/api/v1/leads').set(tenant.auth).set('Content-Type', 'application/json').send('[1,2]');
    expect(response.status).toBe(422);
    expect(response.body.errors).toBeDefined();
  });

  it('answers unknown routes and methods with 404 without an error code', async () => {
    for (const [method, path] of [['get', '/api/v1/nope'], ['get', '/'], ['delete', '/api/v1/leads/1'], ['post', '/api/v1/me'], ['get', '/api/v2/me']] as const) {
      const response = await t.http[method](path).set(tenant.auth);
      expect(response.status).toBe(404);
      expect(response.headers['content-type']).toMatch(/application\/json/);
      expect(response.body).toEqual({ message: expect.any(String) });
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
