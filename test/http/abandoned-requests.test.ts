import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { readTestEnvironment } from '../support/env.js';
import { eventually } from '../support/eventually.js';
import { addKey, createTenant, type Tenant } from '../support/fixtures.js';
import { parseMetrics } from '../support/metrics.js';
import { rowCount } from '../support/requests.js';
import { serveApp, type ServedApp } from '../support/served-app.js';
import { startStallingProxy, type StallingProxy } from '../support/tcp-proxy.js';

// Clients that go away mid-request (a client's timeout, a load tool ending its run): whatever
// step the request was at, every per-key slot it took is given back, the key stays usable,
// nothing is written from a body that never arrived, and nothing is logged as an error.

jest.setTimeout(60_000);

const IN_FLIGHT = 4;
const ABANDONED = 3 * IN_FLIGHT;
const ENV = { RATE_LIMIT_PER_MINUTE: '100000', CONCURRENT_REQUESTS_PER_KEY: String(IN_FLIGHT) };
const INFO_LEVEL = 30;
const ERROR_LEVEL = 50;

interface Abandonable {
  /** The client goes away: its socket is destroyed, whatever the request's state. */
  abandon(): void;
}

/** A request on a socket of its own, its headers (and `body`, or the first `sentBytes` of it) sent at once. */
function startRequest(url: string, path: string, tenant: Tenant, options: { method?: string; body?: string; sentBytes?: number } = {}): Abandonable {
  const body = options.body === undefined ? undefined : Buffer.from(options.body);
  const request = http.request(`${url}${path}`, {
    method: options.method ?? 'GET',
    agent: false,
    headers: { ...tenant.auth, ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(body.length) } : {}) },
  });
  request.on('error', () => {});
  request.flushHeaders();
  if (body) request.write(body.subarray(0, options.sentBytes ?? body.length));
  return { abandon: () => request.destroy() };
}

const inProgress = async (served: ServedApp) => parseMetrics(await served.ctx.metrics.registry.metrics()).value('lead_intake_http_requests_in_progress');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once a new process's key is known to the app (keys made in the test reach it through NOTIFY). */
async function knownTo(served: ServedApp, tenant: Tenant): Promise<Tenant> {
  await eventually(async () => served.ctx.apiKeyPrefixes.mayExist(tenant.prefix), 10_000);
  return tenant;
}

/**
 * Holds the API keys' table locked while `work` runs: authenticating a key the process has not
 * cached waits for it, as on a slow database. `waiting(count)` resolves once `count` of the
 * app's requests wait on it. Resolves `work`'s value after the lock is released.
 */
async function whileKeysLocked<T>(served: ServedApp, databaseUrl: string, work: (waiting: (count: number) => Promise<void>) => Promise<T>): Promise<T> {
  const holder = new pg.Client({ connectionString: databaseUrl });
  const observer = new pg.Client({ connectionString: databaseUrl });
  for (const client of [holder, observer]) {
    client.on('error', () => {});
    await client.connect();
  }
  const waiting = (count: number) =>
    eventually(async () => {
      const { rows } = await observer.query<{ waits: number }>(
        `SELECT count(*)::int AS waits FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%api_keys%'`,
      );
      // Past the pool's size, the rest wait for a connection.
      return rows[0]!.waits + served.ctx.pool.waitingCount >= count;
    }, 10_000);
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
    try {
      return await work(waiting);
    } finally {
      await holder.query('COMMIT');
    }
  } finally {
    await holder.end();
    await observer.end();
  }
}

/** After abandoned requests: no request in progress, no error logged, and the key answered at once. */
async function expectKeyUsable(served: ServedApp, tenant: Tenant): Promise<void> {
  await eventually(async () => (await inProgress(served)) === 0, 10_000);
  const answer = await fetch(`${served.url}/api/v1/me`, { headers: tenant.auth });
  expect(answer.status).toBe(200);
  expect(served.logs.filter((record) => record.level >= ERROR_LEVEL)).toEqual([]);
}

describe('requests whose client goes away', () => {
  let database: TestDatabase;
  let served: ServedApp;
  let tenant: Tenant;
  beforeAll(async () => {
    database = await createTestDatabase();
    served = await serveApp({ databaseUrl: database.url, env: { ...ENV, LOG_LEVEL: 'info' } });
    tenant = await knownTo(served, await createTenant(served.ctx.db));
  });
  afterAll(async () => {
    await served?.close();
    await database?.drop();
  });

  it('give their key back its slots when they were abandoned while authentication waited on the database', async () => {
    // A key the process never saw: authentication reads it from the (locked) database.
    const fresh = await knownTo(served, await addKey(served.ctx.db, tenant));
    await whileKeysLocked(served, database.url, async (waiting) => {
      const requests = Array.from({ length: ABANDONED }, () => startRequest(served.url, '/api/v1/me', fresh));
      await waiting(ABANDONED);
      for (const request of requests) request.abandon();
      // The server hears the sockets close before the database answers.
      await sleep(200);
    });
    await expectKeyUsable(served, fresh);
  });

  it('write nothing and log no error when their POST /leads body never arrived', async () => {
    const fresh = await knownTo(served, await addKey(served.ctx.db, tenant));
    const body = JSON.stringify({ name: 'Never arrived', email: 'never.arrived@gmail.com' });
    const leadsBefore = await rowCount(served.ctx.db, 'leads');
    await whileKeysLocked(served, database.url, async (waiting) => {
      const requests = [
        startRequest(served.url, '/api/v1/leads', fresh, { method: 'POST', body, sentBytes: 10 }),
        startRequest(served.url, '/api/v1/leads', fresh, { method: 'POST', body, sentBytes: 0 }),
        startRequest(served.url, '/api/v1/leads/batch', fresh, { method: 'POST', body: `{"leads":[${body}]}`, sentBytes: 20 }),
      ];
      await waiting(requests.length);
      for (const request of requests) request.abandon();
      await sleep(200);
    });
    // And a body cut off while it is being read, past authentication.
    const cutOff = startRequest(served.url, '/api/v1/leads', fresh, { method: 'POST', body, sentBytes: 10 });
    await sleep(200);
    cutOff.abandon();
    await expectKeyUsable(served, fresh);
    expect(await rowCount(served.ctx.db, 'leads')).toBe(leadsBefore);
    // Each is logged as what it is, a client that left: at info, without a stack.
    const departures = served.logs.filter((record) => record.msg === 'client went away before its answer');
    expect(departures.length).toBeGreaterThanOrEqual(4);
    expect(departures.every((record) => record.level === INFO_LEVEL && record.err === undefined)).toBe(true);
  });

  it('leave every count at zero after load runs that each end mid-request, on every operation', async () => {
    const lead = await fetch(`${served.url}/api/v1/leads`, {
      method: 'POST',
      headers: { ...tenant.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Read often', email: 'read.often@gmail.com' }),
    });
    expect(lead.status).toBe(201);
    const leadId = ((await lead.json()) as { data: { id: number } }).data.id;
    const operations = [
      { path: '/api/v1/me' },
      { path: '/api/v1/tags' },
      { path: `/api/v1/leads/${leadId}` },
      { path: '/api/v1/leads', method: 'POST', body: JSON.stringify({ name: 'Load', email: 'load@gmail.com' }) },
      { path: '/api/v1/leads/batch', method: 'POST', body: JSON.stringify({ leads: [{ name: 'Load', email: 'load.batch@gmail.com' }] }) },
    ];
    const keys: Tenant[] = [];
    for (let run = 0; run < 6; run++) {
      // Each run's key is new to the process, so its requests wait on the database before their slot.
      const key = await knownTo(served, await addKey(served.ctx.db, tenant));
      keys.push(key);
      const requests = Array.from({ length: 2 * IN_FLIGHT }, (_, index) => {
        const operation = operations[(run + index) % operations.length]!;
        return startRequest(served.url, operation.path, key, operation);
      });
      // The run ends with its requests at every step: some at once, some a little later.
      for (const [index, request] of requests.entries()) setTimeout(() => request.abandon(), index % 3);
      await sleep(50);
    }
    for (const key of keys) await expectKeyUsable(served, key);
  });
});

const redisUrl = readTestEnvironment().redisUrl;
if (redisUrl) {
  describe('requests whose client goes away while the rate limiter waits on Redis', () => {
    let database: TestDatabase;
    let proxy: StallingProxy;
    let served: ServedApp;
    let tenant: Tenant;
    beforeAll(async () => {
      database = await createTestDatabase();
      proxy = await startStallingProxy(Number(new URL(redisUrl).port || 6379));
      served = await serveApp({ databaseUrl: database.url, env: { ...ENV, REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
      tenant = await knownTo(served, await createTenant(served.ctx.db));
    });
    afterAll(async () => {
      await served?.close();
      await proxy?.close();
      await database?.drop();
    });

    it('give their key back its slots once Redis answers again', async () => {
      // Cached: the requests pass authentication at once and wait on Redis.
      expect((await fetch(`${served.url}/api/v1/me`, { headers: tenant.auth })).status).toBe(200);
      proxy.stall();
      try {
        const sentBefore = proxy.bytesToServer;
        const requests = Array.from({ length: ABANDONED }, () => startRequest(served.url, '/api/v1/me', tenant));
        await eventually(async () => proxy.bytesToServer > sentBefore, 10_000);
        await sleep(200);
        for (const request of requests) request.abandon();
        await sleep(200);
      } finally {
        proxy.resume();
      }
      await expectKeyUsable(served, tenant);
    });
  });
} else {
  describe('requests whose client goes away while the rate limiter waits on Redis', () => {
    it.skip('skipped: REDIS_URL is not set', () => {});
  });
}
