import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { readTestEnvironment } from '../support/env.js';

// Tests start apps of their own (two at once for the shared store) and send a key's whole
// budget: tens of seconds on a loaded machine against a Citus coordinator.
jest.setTimeout(90_000);

const LIMIT = 300;

async function exhaust(t: TestApp, tenant: Tenant): Promise<number[]> {
  const statuses: number[] = [];
  // Sequential in small groups: the count must be exact, not approximately right.
  for (let sent = 0; sent < LIMIT; sent += 25) {
    const group = await Promise.all(Array.from({ length: 25 }, () => t.http.get('/api/v1/me').set(tenant.auth)));
    statuses.push(...group.map((response) => response.status));
  }
  return statuses;
}

/** The `r` (remaining) parameter of a draft-8 RateLimit header. */
function remaining(response: { headers: Record<string, string> }): number {
  const match = /;\s*r=(\d+)\s*(;|$)/.exec(response.headers.ratelimit ?? '');
  if (!match) throw new Error(`no remaining count in RateLimit: ${response.headers.ratelimit}`);
  return Number(match[1]);
}

const hundredRows = () => ({ leads: Array.from({ length: 100 }, (_, row) => ({ name: `Row ${row}`, email: `row${row}@acme.test` })) });

function describeLimiter(label: string, options: { redis: boolean }) {
  describe(`rate limit (${label})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ redis: options.redis });
    });
    afterAll(() => t?.close());

    it('answers the 301st request in a minute with 429 while another key still gets 200', async () => {
      const busy = await createTenant(t.ctx.db);
      const quiet = await createTenant(t.ctx.db);

      const statuses = await exhaust(t, busy);
      expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);

      const limited = await t.http.get('/api/v1/me').set(busy.auth);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({
        error: 'rate_limited',
        message: 'Too many requests: this API key may make 300 requests per minute. Retry after the number of seconds in the Retry-After header.',
      });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['ratelimit-policy']).toMatch(/q=300/);
      expect(remaining(limited)).toBe(0);

      const other = await t.http.get('/api/v1/me').set(quiet.auth);
      expect(other.status).toBe(200);
      expect(remaining(other)).toBe(299);
    });

    it("names each key's own quota partition in RateLimit-Policy, the same on each of its answers", async () => {
      const first = await createTenant(t.ctx.db);
      const second = await createTenant(t.ctx.db);
      const partitionOf = async (tenant: Tenant) => {
        const response = await t.http.get('/api/v1/me').set(tenant.auth);
        const match = /;\s*pk=:([A-Za-z0-9+/=]+):/.exec(response.headers['ratelimit-policy'] ?? '');
        if (!match) throw new Error(`no partition key in RateLimit-Policy: ${response.headers['ratelimit-policy']}`);
        return match[1];
      };
      const firstKey = await partitionOf(first);
      expect(await partitionOf(second)).not.toBe(firstKey);
      expect(await partitionOf(first)).toBe(firstKey);
    });

    it("gives each of a key's concurrent requests a count of its own", async () => {
      const tenant = await createTenant(t.ctx.db);
      // Sent together, they reach the server in the same turns of its event loop: counted
      // together, each must still see the remaining budget its own request left.
      const responses = await Promise.all(Array.from({ length: 40 }, () => t.http.get('/api/v1/me').set(tenant.auth)));
      expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 40 }, () => 200));
      expect(responses.map(remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, index) => LIMIT - 40 + index));
    });

    it('counts a 100-row batch as one request', async () => {
      const tenant = await createTenant(t.ctx.db);
      const batch = await t.http.post('/api/v1/leads/batch').set(tenant.auth).send(hundredRows());
      expect(batch.status).toBe(200);
      expect(remaining(batch)).toBe(299);
      expect(remaining(await t.http.get('/api/v1/me').set(tenant.auth))).toBe(298);
    });

    it('spends the budget on answers refused for scope (403) and for the body (422)', async () => {
      const readOnly = await createTenant(t.ctx.db, { scopes: ['leads:read'] });
      const forbidden = await t.http.post('/api/v1/leads').set(readOnly.auth).send({ name: 'A', email: 'a@acme.test' });
      expect(forbidden.status).toBe(403);
      const invalid = await t.http.get('/api/v1/leads/1?unknown=1').set(readOnly.auth);
      expect(invalid.status).toBe(422);
      expect(remaining(await t.http.get('/api/v1/me').set(readOnly.auth))).toBe(297);
    });

    it('clears with its window: 429, then 200 once the window has passed', async () => {
      // Three seconds: the first three requests must fall in one window even on a loaded machine
      // (with one second, a slow first answer on a CI run let the third start a new window).
      const short = await startTestApp({ redis: options.redis, rateLimitWindowMs: 3000, env: { RATE_LIMIT_PER_MINUTE: '2' } });
      try {
        const tenant = await createTenant(short.ctx.db);
        const statuses = [];
        for (let sent = 0; sent < 3; sent += 1) statuses.push((await short.http.get('/api/v1/me').set(tenant.auth)).status);
        const limited = await short.http.get('/api/v1/me').set(tenant.auth);
        expect([...statuses, limited.status]).toEqual([200, 200, 429, 429]);
        // Retry-After rounds the rest of the window up to whole seconds: waiting it out reaches the next window.
        const retryAfter = Number(limited.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(3);
        await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
        const cleared = await short.http.get('/api/v1/me').set(tenant.auth);
        expect(cleared.status).toBe(200);
        expect(remaining(cleared)).toBe(1);
      } finally {
        await short.close();
      }
    });

    it('limits every route once the budget is spent', async () => {
      const tenant = await createTenant(t.ctx.db);
      await exhaust(t, tenant);
      expect(
        (
          await t.http
            .post('/api/v1/leads/batch')
            .set(tenant.auth)
            .send({ leads: [{ name: 'A', email: 'a@acme.test' }] })
        ).status,
      ).toBe(429);
      expect((await t.http.get('/api/v1/tags').set(tenant.auth)).status).toBe(429);
    });
  });
}

describeLimiter('in-process store', { redis: false });

describe('rate limit configuration and degraded Redis', () => {
  it('reports and enforces a configured RATE_LIMIT_PER_MINUTE', async () => {
    const t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const tenant = await createTenant(t.ctx.db);
      const me = await t.http.get('/api/v1/me').set(tenant.auth);
      expect(me.body.data.rate_limit.requests_per_minute).toBe(3);
      await t.http.get('/api/v1/me').set(tenant.auth);
      await t.http.get('/api/v1/me').set(tenant.auth);
      expect((await t.http.get('/api/v1/me').set(tenant.auth)).status).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('answers 429 before 403: a spent key is limited on a route its scopes do not allow', async () => {
    const t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '1' } });
    try {
      const readOnly = await createTenant(t.ctx.db, { scopes: ['leads:read'] });
      expect((await t.http.get('/api/v1/me').set(readOnly.auth)).status).toBe(200);
      const refused = await t.http.post('/api/v1/leads').set(readOnly.auth).send({ name: 'A', email: 'a@acme.test' });
      expect(refused.status).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('keeps answering and keeps limiting, per process, while Redis is unreachable', async () => {
    // Nothing listens on port 1: every Redis command fails at once.
    const t = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_PER_MINUTE: '5' } });
    try {
      const tenant = await createTenant(t.ctx.db);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i += 1) statuses.push((await t.http.get('/api/v1/me').set(tenant.auth)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const ready = await t.http.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ database: 'ok', redis: 'unreachable' });
    } finally {
      await t.close();
    }
  });
});

const redisAvailable = readTestEnvironment().redisUrl !== null;
if (redisAvailable) {
  describeLimiter('Redis store', { redis: true });

  describe('rate limit shared through Redis', () => {
    it('counts one key across two API processes', async () => {
      const first = await startTestApp({ redis: true });
      const second = await startTestApp({ redis: true, sameDatabaseAs: first });
      try {
        const tenant = await createTenant(first.ctx.db);
        expect((await exhaust(first, tenant)).every((status) => status === 200)).toBe(true);
        expect((await second.http.get('/api/v1/me').set(tenant.auth)).status).toBe(429);
      } finally {
        await second.close();
        await first.close();
      }
    });
  });
} else {
  describe('rate limit (Redis store)', () => {
    it.skip('skipped: REDIS_URL is not set', () => {});
  });
}
