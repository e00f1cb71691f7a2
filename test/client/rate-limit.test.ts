import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { clientFor, recordingFetch, recordingSleep } from '../support/client.js';
import { createTenant, type Tenant } from '../support/fixtures.js';

// The service's real limiter, with a budget of 2 requests per minute. The client's waits
// go through an injected sleep that records them and then clears the key's window in the
// limiter's store, as the minute running out would.

const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '2' } }, tenants: [] });
let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  ({ t } = bed);
  baseUrl = await t.listen();
});

const windowClears = (tenant: Tenant) => recordingSleep(() => t.ctx.rateLimitStore.resetKey(tenant.prefix));

describe('the client and the rate limit', () => {
  it('waits out a 429 for Retry-After seconds, then gets the answer', async () => {
    const tenant = await createTenant(t.ctx.db);
    for (let spent = 0; spent < 2; spent++) expect((await t.http.get('/api/v1/me').set(tenant.auth)).status).toBe(200);
    const { sent, fetch } = recordingFetch();
    const { waits, sleep } = windowClears(tenant);

    const result = await clientFor(baseUrl, tenant, { fetch, sleep }).me();

    expect(result).toMatchObject({ ok: true, status: 200, attempts: 2 });
    expect(sent).toHaveLength(2);
    expect(waits).toHaveLength(1);
    // Retry-After is whole seconds until the one-minute window clears.
    expect(waits[0]! % 1000).toBe(0);
    expect(waits[0]).toBeGreaterThan(0);
    expect(waits[0]).toBeLessThanOrEqual(60_000);
  });

  it('returns the typed 429 when the window does not clear within the attempt limit', async () => {
    const tenant = await createTenant(t.ctx.db);
    for (let spent = 0; spent < 2; spent++) await t.http.get('/api/v1/me').set(tenant.auth);
    const { sent, fetch } = recordingFetch();
    const { waits, sleep } = recordingSleep();

    const result = await clientFor(baseUrl, tenant, { fetch, sleep, maxAttempts: 3 }).createLead({ name: 'Limited', email: 'limited@acme.test' });

    expect(sent).toHaveLength(3);
    expect(waits).toHaveLength(2);
    expect(result).toMatchObject({ ok: false, status: 429, attempts: 3, error: { error: 'rate_limited', message: expect.any(String) } });
  });

  it('createLeads paces its batches by the RateLimit header instead of collecting 429s', async () => {
    const tenant = await createTenant(t.ctx.db);
    const { sent, fetch } = recordingFetch();
    const { waits, sleep } = windowClears(tenant);
    const rows = Array.from({ length: 5 }, (_, n) => ({ name: `Paced ${n}`, email: `paced${n}@acme.test` }));

    const result = await clientFor(baseUrl, tenant, { fetch, sleep }).createLeads(rows, { batchSize: 2, enrich: false });

    // Three batches, three requests: the second answer said `r=0`, so the third waited for the window.
    expect(sent.map((request) => (request.body as { leads: unknown[] }).leads.length)).toEqual([2, 2, 1]);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0);
    expect(result.ok).toBe(true);
    expect(result.rows.map((row) => row.status)).toEqual(['created', 'created', 'created', 'created', 'created']);
  });
});
