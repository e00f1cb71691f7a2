import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import type { Tenant } from '../support/fixtures.js';
import { lockedLead, lockWaits, occupyGroups } from '../support/held-writes.js';
import { parseMetrics } from '../support/metrics.js';
import { postBatch, postLead, uniqueEmail } from '../support/requests.js';
import { testBed } from '../support/test-bed.js';

// Per-key fairness: one API key with as many requests in progress as it may have (held up by a
// lead the test keeps locked) is answered 429 for one more, and holds no more than its share
// of the connections, so another key beside it is served as before. The write queue is bounded.

const IN_FLIGHT = 12;
const QUEUE = 3;
const bed = testBed({
  tenants: [{ name: 'Busy' }, { name: 'Other' }],
  // The default pool of 10: batches and dry runs share 7 connections, 4 at most for one key.
  app: { env: { RATE_LIMIT_PER_MINUTE: '100000', CONCURRENT_REQUESTS_PER_KEY: String(IN_FLIGHT), WRITE_QUEUE_LIMIT: String(QUEUE) } },
});
let t: TestApp;
let busy: Tenant;
let other: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [busy, other],
  } = bed);
});

const sent = (request: PromiseLike<Response>) => Promise.resolve(request);

const concurrencyLimited = async () => parseMetrics(await t.ctx.metrics.registry.metrics()).value('lead_intake_http_concurrency_limited_requests_total');

describe('the per-key concurrency limit', () => {
  it('answers 429 to a key over its bound, with Retry-After and the rate limit headers; another key beside it is served at once', async () => {
    const existing = await postLead(t, other, { name: 'Readable', email: uniqueEmail('other') });
    const locked = await lockedLead(t, busy);
    const limitedBefore = await concurrencyLimited();
    // Each batch updates the locked lead, so it waits in its transaction holding a connection, or waits for a slot.
    const held = Array.from({ length: IN_FLIGHT }, () =>
      sent(
        postBatch(t, busy, {
          leads: [
            { name: 'Held', email: locked.email },
            { name: 'New', email: uniqueEmail('busy') },
          ],
        }),
      ),
    );
    let others: Response[];
    let elapsedMs: number;
    try {
      // Every batch is in: waiting on the lock, for a slot, or for a connection of the pool.
      await lockWaits(t, (waits) => waits + t.ctx.writeGroups.waitingForSlots + t.ctx.pool.waitingCount === IN_FLIGHT);

      const refused = await t.http.get('/api/v1/me').set(busy.auth);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ error: 'rate_limited', message: expect.stringContaining(`${IN_FLIGHT} requests in progress`) });
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers.ratelimit).toMatch(/^"100000-per-minute"; r=\d+; t=\d+$/);
      expect(refused.headers['ratelimit-policy']).toMatch(/^"100000-per-minute"; q=100000; w=60/);
      expect(await concurrencyLimited()).toBe(limitedBefore + 1);

      const started = Date.now();
      others = await Promise.all([
        sent(postBatch(t, other, { leads: [{ name: 'Other batch', email: uniqueEmail('other') }] })),
        sent(postBatch(t, other, { dry_run: true, leads: [{ name: 'Other preview', email: uniqueEmail('other') }] })),
        sent(postLead(t, other, { name: 'Other single', email: uniqueEmail('other') })),
        sent(t.http.get(`/api/v1/leads/${existing.body.data.id}`).set(other.auth)),
        sent(t.http.get('/api/v1/me').set(other.auth)),
      ]);
      elapsedMs = Date.now() - started;
    } finally {
      await locked.release();
    }
    expect(others.map((answer) => answer.status)).toEqual([200, 200, 201, 200, 200]);
    // A connection waited for would take DATABASE_CONNECT_TIMEOUT_MS (10 s in the tests) and answer 503.
    expect(elapsedMs).toBeLessThan(3000);

    expect((await Promise.all(held)).map((answer) => answer.status)).toEqual(held.map(() => 200));
    // Answered requests no longer count: the key is served again.
    expect((await t.http.get('/api/v1/me').set(busy.auth)).status).toBe(200);
  });
});

describe('the write queue', () => {
  it(`answers 503 with Retry-After to a single write beyond its ${QUEUE} waiting places, and runs the ones it holds`, async () => {
    const occupied = await occupyGroups(t, busy);
    const queued: Array<Promise<Response>> = [];
    let full: Response;
    try {
      for (let n = 0; n < QUEUE; n += 1) queued.push(sent(postLead(t, other, { name: 'Queued', email: uniqueEmail('queued') })));
      await eventually(async () => t.ctx.writeGroups.waiting === QUEUE, 10_000, 5);
      full = await postLead(t, other, { name: 'One too many', email: uniqueEmail('full') });
    } finally {
      await occupied.release();
    }
    expect(full.status).toBe(503);
    expect(full.body).toEqual({ error: 'service_unavailable', message: expect.stringContaining('Too many writes are waiting') });
    expect(full.headers['retry-after']).toBe('1');
    await occupied.finished();
    expect((await Promise.all(queued)).map((answer) => answer.status)).toEqual(queued.map(() => 201));
  });
});
