import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { readContract } from '../../src/http/contract-routes.js';
import type { OperationId } from '../../src/http/operations.js';
import { OPENAPI_PATH } from '../../src/paths.js';
import { pino } from 'pino';
import { isUnavailable } from '../../src/db/availability.js';
import { createDb, createPool } from '../../src/db/connect.js';
import { eventually } from '../support/eventually.js';
import { documentedResponse, schemaProblems } from '../support/contract-document.js';
import { createTenant } from '../support/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { serveApp, startSilentServer, unreachableDatabaseUrl, type LogRecord, type ServedApp } from '../support/served-app.js';
import { fetchCheckedAgainstDocument } from '../support/document-check.js';

// While PostgreSQL cannot be reached, every operation answers at once (within 2 s) with the
// documented 503, its body and Retry-After: for a key nobody checked yet too (never a 401 or
// a 500 because the database is down), and for idempotent writes. The outage is logged once,
// not once per request. Responses are validated against the document (validateResponses).

const ANSWER_WITHIN_MS = 2000;
// Well-formed, never cached: authenticating it needs the database.
const TOKEN = 'lk7f3a9c2e1b_3xQ9vN2kT7wLp4sR8mY1cZ6bH0dF5gJ2aK9eU3iO7qW';
const lead = { name: 'Jane Doe', email: 'jane@acme-robotics.com' };

interface Sample {
  path: string;
  method: string;
  body?: unknown;
  headers?: Record<string, string>;
}
// One valid request per operation of the document; a new operation fails the typecheck here.
const samples: Record<OperationId, Sample[]> = {
  getMe: [{ method: 'GET', path: '/api/v1/me' }],
  listTags: [{ method: 'GET', path: '/api/v1/tags?include_archived=true' }],
  getLead: [{ method: 'GET', path: '/api/v1/leads/1' }],
  createLead: [
    { method: 'POST', path: '/api/v1/leads', body: lead },
    { method: 'POST', path: '/api/v1/leads', body: lead, headers: { 'Idempotency-Key': 'outage-1' } },
  ],
  createLeadsBatch: [
    { method: 'POST', path: '/api/v1/leads/batch', body: { leads: [lead] } },
    { method: 'POST', path: '/api/v1/leads/batch', body: { leads: [lead] }, headers: { 'Idempotency-Key': 'outage-2' } },
  ],
};
const operations = readContract(OPENAPI_PATH).operations;

async function send(base: string, sample: Sample) {
  const started = Date.now();
  const response = await fetchCheckedAgainstDocument(`${base}${sample.path}`, {
    method: sample.method,
    headers: { Authorization: `Bearer ${TOKEN}`, ...(sample.body ? { 'Content-Type': 'application/json' } : {}), ...sample.headers },
    body: sample.body ? JSON.stringify(sample.body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as unknown, ms: Date.now() - started };
}

/** Every operation's samples at once, each answered like the document's 503 within the budget. */
async function expectEveryOperationUnavailable(app: ServedApp): Promise<void> {
  const cases = operations.flatMap((operation) => samples[operation.operationId].map((sample) => ({ operation, sample })));
  // A route's first request also compiles its validator: on a loaded machine that alone can
  // take seconds. The round that counts is the next one, where only the outage can make it wait.
  const first = await Promise.all(cases.map(({ sample }) => send(app.url, sample)));
  expect(first.map((answer) => answer.status)).toEqual(cases.map(() => 503));
  const answers = await Promise.all(cases.map(({ sample }) => send(app.url, sample)));
  cases.forEach(({ operation }, index) => {
    const answer = answers[index]!;
    const { examples, schemaPointer } = documentedResponse(operation.path, operation.method, 503);
    expect({ operation: operation.operationId, status: answer.status, body: answer.body, retryAfter: answer.headers.get('retry-after') }).toEqual({
      operation: operation.operationId,
      status: 503,
      body: examples.serviceUnavailable,
      retryAfter: '5',
    });
    expect(schemaProblems(schemaPointer, answer.body)).toEqual([]);
    expect(answer.ms).toBeLessThan(ANSWER_WITHIN_MS);
  });
}

async function readiness(app: ServedApp) {
  const started = Date.now();
  const response = await fetch(`${app.url}/readyz`);
  return { status: response.status, body: await response.json(), ms: Date.now() - started };
}

const errorsLogged = (logs: LogRecord[]) => logs.filter((line) => line.level >= 50).map((line) => `${String(line.pool ?? '')} ${line.msg}`);

let app: ServedApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('PostgreSQL refusing connections (stopped, restarting)', () => {
  it('answers every operation with the documented 503 and Retry-After within 2 s, and /readyz with 503', async () => {
    app = await serveApp({ databaseUrl: await unreachableDatabaseUrl() });
    await expectEveryOperationUnavailable(app);
    const ready = await readiness(app);
    expect(ready).toEqual({ status: 503, body: { status: 'not_ready', database: 'unreachable', redis: 'not configured' }, ms: expect.any(Number) });
    expect(ready.ms).toBeLessThan(ANSWER_WITHIN_MS);
  });

  it('logs the outage once for the pool (and once for the key cache), not once per request', async () => {
    app = await serveApp({ databaseUrl: await unreachableDatabaseUrl() });
    for (let round = 0; round < 3; round += 1) await expectEveryOperationUnavailable(app);
    const errors = errorsLogged(app.logs);
    expect(errors.filter((line) => line.startsWith('api PostgreSQL unreachable'))).toHaveLength(1);
    expect(new Set(errors).size).toBe(errors.length);
    // The 503s themselves are no error lines: nothing about a request is logged at warn or above.
    expect(app.logs.filter((line) => line.msg === 'request errored' || line.msg === 'unhandled error')).toEqual([]);
  });
});

describe('PostgreSQL accepting connections and never answering (a hung host)', () => {
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  afterAll(async () => {
    await silent?.close();
  });

  it('still answers every operation with 503 within 2 s: the wait for a connection is bounded', async () => {
    silent = await startSilentServer();
    // A wait of 0.5 s, not the default 1.5 s: the rest of the 2 s must cover this process (app
    // and test in one event loop) on a shared, loaded machine, which took up to 1.3 s here.
    app = await serveApp({ databaseUrl: await unreachableDatabaseUrl(silent.port), env: { DATABASE_CONNECT_TIMEOUT_MS: '500' } });
    await expectEveryOperationUnavailable(app);
    const ready = await readiness(app);
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(ANSWER_WITHIN_MS);
  }, 60_000);
});

describe('every connection of the pool busy for longer than the wait allows', () => {
  let database: TestDatabase | undefined;
  afterAll(async () => {
    await database?.drop();
  });

  it('answers 503 within 2 s, logs the exhaustion once, and serves again once a connection is free', async () => {
    database = await createTestDatabase();
    app = await serveApp({ databaseUrl: database.url, env: { DATABASE_POOL_SIZE: '1' } });
    // The pool's one connection opened once, before it is held (opening one on a loaded machine can take longer than the wait).
    const setup = createDb(createPool(database.url, 1, { logger: pino({ level: 'silent' }), name: 'setup', connectTimeoutMs: 30_000 }));
    const tenant = await createTenant(setup).finally(() => setup.destroy());
    await eventually(
      async () =>
        await app!.ctx.pool.query('SELECT 1').then(
          () => true,
          () => false,
        ),
      30_000,
      100,
    );
    const request = () =>
      fetchCheckedAgainstDocument(`${app!.url}/api/v1/leads/batch`, {
        method: 'POST',
        headers: { ...tenant.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ leads: [lead] }),
      });
    const held = await app.ctx.pool.connect();
    try {
      const answers = await Promise.all(
        [0, 1, 2].map(async () => {
          const started = Date.now();
          const response = await request();
          return {
            status: response.status,
            retryAfter: response.headers.get('retry-after'),
            error: ((await response.json()) as { error?: string }).error,
            ms: Date.now() - started,
          };
        }),
      );
      for (const answer of answers) {
        expect({ ...answer, ms: undefined }).toEqual({ status: 503, retryAfter: '5', error: 'service_unavailable', ms: undefined });
        expect(answer.ms).toBeLessThan(ANSWER_WITHIN_MS);
      }
    } finally {
      held.release();
    }
    expect((await request()).status).toBe(200);
    // Saturation is no outage: one warning, no error.
    expect(app.logs.filter((line) => /^PostgreSQL pool exhausted/.test(line.msg)).map((line) => line.level)).toEqual([40]);
    expect(errorsLogged(app.logs)).toEqual([]);
  });
});

describe('what counts as the database being unreachable', () => {
  it.each([
    ['ECONNREFUSED', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['ECONNRESET', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['admin shutdown 57P01', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['crash shutdown 57P02', Object.assign(new Error('terminating connection because of crash of another server process'), { code: '57P02' })],
    ['starting up 57P03', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['too many connections 53300', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
    ['connection exception class 08', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['a read-only server 25006 (now a replica)', Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' })],
    ['connection terminated', new Error('Connection terminated unexpectedly')],
    ['pool wait timeout', new Error('timeout exceeded when trying to connect')],
    ['refused on every address', new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })])],
  ])('%s is', (_name, error) => {
    expect(isUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key value'), { code: '23505' })],
    ['a statement timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })],
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['a plain bug', new TypeError('x is undefined')],
  ])('%s is not (a 500, logged with its stack)', (_name, error) => {
    expect(isUnavailable(error)).toBe(false);
  });
});
