import { beforeAll, describe, expect, it } from '@jest/globals';
import { revokeKey } from '../../src/api-keys/repository.js';
import { removeMember } from '../../src/workspaces/members.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import { API_TIMESTAMP } from '../support/timestamps.js';
import { OPERATOR } from '../../src/audit/service.js';

const bed = testBed({ tenants: [{ name: 'Acme Sales' }] });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

/**
 * A key that authenticates, then `change` to it (committed outside the app, which hears of
 * it through NOTIFY within milliseconds) until it no longer does: the answer it then gets.
 */
async function answerAfter(change: (key: Tenant) => Promise<unknown>) {
  const key = await createTenant(t.ctx.db);
  expect((await t.http.get('/api/v1/me').set(key.auth)).status).toBe(200);
  await change(key);
  // NOTIFY arrives within milliseconds on a quiet machine; the deadline is for a loaded one.
  await eventually(async () => (await t.http.get('/api/v1/me').set(key.auth)).status === 401, 15_000);
  return t.http.get('/api/v1/me').set(key.auth);
}

/** A 401 with exactly the documented body: no field more, none less. */
const expectInvalidKey = (response: { status: number; body: unknown }, message: string) => {
  expect({ status: response.status, body: response.body }).toEqual({ status: 401, body: { error: 'invalid_api_key', message, documentation_url: t.ctx.config.DOCUMENTATION_URL } });
};

describe('authentication', () => {
  it('rejects a request without an Authorization header', async () => {
    expectInvalidKey(await t.http.get('/api/v1/me'), 'No API key was sent. Send it as "Authorization: Bearer <API_KEY>".');
  });

  it('rejects a header that is not a bearer token', async () => {
    expectInvalidKey(await t.http.get('/api/v1/me').set('Authorization', `Basic ${tenant.token}`), 'The Authorization header must have the form "Bearer <API_KEY>".');
  });

  it('rejects a malformed token', async () => {
    expectInvalidKey(await t.http.get('/api/v1/me').set('Authorization', 'Bearer not-a-key'), 'The API key is malformed.');
  });

  it('rejects an unknown key and a known prefix with the wrong secret', async () => {
    expectInvalidKey(await t.http.get('/api/v1/me').set('Authorization', `Bearer lk0000000000_${'A'.repeat(43)}`), 'The API key is invalid.');
    expectInvalidKey(await t.http.get('/api/v1/me').set('Authorization', `Bearer ${tenant.prefix}_${'B'.repeat(43)}`), 'The API key is invalid.');
  });

  it('rejects a revoked key, also one the process had cached', async () => {
    const response = await answerAfter((key) => revokeKey(t.ctx.db, key.keyId, key.workspaceId));
    expectInvalidKey(response, 'The API key has been revoked.');
  });

  it('rejects an expired key', async () => {
    const key = await createTenant(t.ctx.db, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    const response = await t.http.get('/api/v1/me').set(key.auth);
    expectInvalidKey(response, 'The API key has expired.');
  });

  it('rejects an orphaned key with its own message and the same code', async () => {
    const orphaned = await answerAfter((key) => removeMember(t.ctx.db, OPERATOR, key.workspaceId, key.userId));
    expectInvalidKey(orphaned, 'The API key is orphaned: the user who created it no longer exists or no longer holds the update-companies permission. Create a new key.');
  });
});

describe('GET /me', () => {
  it('describes the workspace, the key and the rate limit, with API timestamps', async () => {
    const response = await t.http.get('/api/v1/me').set(tenant.auth);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: {
        workspace: { id: tenant.workspaceId, name: 'Acme Sales' },
        api_key: {
          name: 'Test key',
          prefix: tenant.prefix,
          scopes: ['leads:write', 'leads:read', 'tags:read'],
          expires_at: null,
          last_used_at: expect.stringMatching(API_TIMESTAMP),
        },
        rate_limit: { requests_per_minute: 300, batch_max: 100 },
      },
    });
    expect(tenant.token.startsWith(`${tenant.prefix}_`)).toBe(true);
  });

  it('answers a key with no scopes at all', async () => {
    const bare = await createTenant(t.ctx.db, { scopes: [] });
    const response = await t.http.get('/api/v1/me').set(bare.auth);
    expect(response.status).toBe(200);
    expect(response.body.data.api_key.scopes).toEqual([]);
  });

  it('reports expires_at in the API timestamp format', async () => {
    const expiring = await createTenant(t.ctx.db, { expiresAt: '2099-01-02T03:04:05.123Z' });
    const response = await t.http.get('/api/v1/me').set(expiring.auth);
    expect(response.body.data.api_key.expires_at).toBe('2099-01-02T03:04:05.123000Z');
  });

  it('keeps last_used_at current without writing on every request', async () => {
    const key = await createTenant(t.ctx.db);
    const stored = () => t.ctx.db.selectFrom('api_keys').where('id', '=', key.keyId).select('last_used_at').executeTakeFirstOrThrow();
    expect((await stored()).last_used_at).toBeNull();
    await t.http.get('/api/v1/me').set(key.auth);
    const first = (await stored()).last_used_at;
    expect(first).toMatch(API_TIMESTAMP);
    await t.http.get('/api/v1/me').set(key.auth);
    expect((await stored()).last_used_at).toBe(first);
  });
});

describe('scopes and check order', () => {
  it('answers 403 with the required and granted scopes', async () => {
    const readOnly = await createTenant(t.ctx.db, { scopes: ['leads:read'] });
    const response = await t.http.get('/api/v1/tags').set(readOnly.auth);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({
      error: 'insufficient_scope',
      message: expect.any(String),
      required_scope: 'tags:read',
      granted_scopes: ['leads:read'],
    });
  });

  it('guards each route with its own scope', async () => {
    const tagsOnly = await createTenant(t.ctx.db, { scopes: ['tags:read'] });
    expect((await t.http.get('/api/v1/tags').set(tagsOnly.auth)).status).toBe(200);
    expect((await t.http.get('/api/v1/leads/1').set(tagsOnly.auth)).body.required_scope).toBe('leads:read');
    expect((await t.http.post('/api/v1/leads').set(tagsOnly.auth).send({})).body.required_scope).toBe('leads:write');
    expect((await t.http.post('/api/v1/leads/batch').set(tagsOnly.auth).send({})).body.required_scope).toBe('leads:write');
  });

  it('authenticates before checking scope, and checks scope before validating the body', async () => {
    const noWrite = await createTenant(t.ctx.db, { scopes: ['leads:read'] });
    const invalidBody = { name: '' };
    expect((await t.http.post('/api/v1/leads').send(invalidBody)).status).toBe(401);
    expect((await t.http.post('/api/v1/leads').set(noWrite.auth).send(invalidBody)).status).toBe(403);
    expect((await t.http.post('/api/v1/leads').set(tenant.auth).send(invalidBody)).status).toBe(422);
  });

  it('validates the body before looking at the Idempotency-Key length', async () => {
    const longKey = 'k'.repeat(256);
    const malformed = await t.http.post('/api/v1/leads').set(tenant.auth).set('Idempotency-Key', longKey).send({ email: 'x@acme.test' });
    expect(malformed.status).toBe(422);
    const valid = await t.http.post('/api/v1/leads').set(tenant.auth).set('Idempotency-Key', longKey).send({ name: 'Jane', email: 'jane@acme.test' });
    expect(valid.status).toBe(400);
    expect(valid.body).toEqual({ error: 'invalid_idempotency_key', message: expect.any(String) });
  });
});
