import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createDb, createPool, type Db } from '../../src/db/connect.js';
import { createWorkflow } from '../../src/workflows/service.js';
import { cliJson } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { readTestEnvironment } from '../support/env.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { startCollector, type CollectedSpan, type Collector } from '../support/otlp-collector.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../support/service.js';
import { OPERATOR } from '../../src/audit/service.js';

// One trace from the integrator's request to the receiver (README, "Tracing"): the compiled
// API (`npm start`, WORKER=off) and a separate worker (`npm run worker`) export to an OTLP/HTTP
// receiver this test runs; a lead posted with a `traceparent` must show up in that trace in
// both processes, and its webhook must carry the trace to the test's receiver.

const SERVER = 2;
const CLIENT = 3;

let database: TestDatabase;
let db: Db;
let receiver: Receiver;
let collector: Collector;
const processes: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(createPool(database.url, 2, { logger: pino({ level: 'silent' }), name: 'test' }));
  receiver = await startReceiver({ databaseUrl: database.url });
  collector = await startCollector();
});
afterAll(async () => {
  await Promise.all(processes.map((service) => service.stop()));
  await collector?.close();
  await receiver?.close();
  await db?.destroy();
  await database?.drop();
});

/** A compiled process with what every test here gives it; `loadedModules`: a file that lists every module it resolves. */
function start(entry: 'main.js' | 'worker-main.js', env: Record<string, string>, loadedModules?: string): ServiceProcess {
  const preload = loadedModules ? ['--import', path.join(ROOT, 'test', 'support', 'loaded-modules.mjs')] : [];
  const service = startService(process.execPath, [...preload, path.join(ROOT, 'dist', 'src', entry)], {
    env: {
      ...baseEnvironment(),
      DATABASE_URL: database.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      WORKER: 'off',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      OUTBOX_POLL_MS: '50',
      ...(loadedModules ? { LOADED_MODULES_FILE: loadedModules } : {}),
      ...env,
    },
  });
  processes.push(service);
  return service;
}

async function apiUrl(service: ServiceProcess): Promise<string> {
  // Minutes, not seconds: on a loaded machine a process of the test run starts slowly.
  return String((await service.waitForLog('Lead Intake API listening', 240_000)).url);
}

const postLead = (url: string, tenant: Tenant, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/leads`, { method: 'POST', headers: { ...tenant.auth, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('tracing with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let tenant: Tenant;
  let url: string;
  let worker: ServiceProcess;
  let api: ServiceProcess;

  beforeAll(async () => {
    tenant = await createTenant(db, { name: 'Traced Sales' });
    await createWorkflow(db, OPERATOR, {
      workspaceId: tenant.workspaceId,
      trigger: 'lead_created',
      block: { endpoint: 'url', url: `${receiver.url}/crm`, method: 'POST', format: 'json', headers: [], fields: [] },
    });
    // With Redis (the rate limit's store), its calls are spans of the request too.
    const redis = readTestEnvironment().redisUrl;
    const tracing = {
      ...(redis ? { REDIS_URL: redis } : {}),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    api = start('main.js', tracing);
    url = await apiUrl(api);
    worker = start('worker-main.js', tracing);
    await worker.waitForLog('worker started', 240_000);
  }, 600_000);

  it('follows a POST /leads with a traceparent through the write group, PostgreSQL, the outbox, the worker and the webhook', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const response = await postLead(url, tenant, { name: 'Grace Hopper', email: 'grace@navy.test', enrich: false }, { traceparent: `00-${traceId}-${callerSpanId}-01` });
    expect(response.status).toBe(201);

    // The receiver got the webhook with the integrator's trace id.
    await eventually(async () => receiver.requests.some((request) => request.path === '/crm'), 30_000, 50);
    const webhook = receiver.requests.find((request) => request.path === '/crm')!;
    expect(String(webhook.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const ofTrace = (service: string) => collector.spans.filter((span) => span.traceId === traceId && span.service === service);
    const named = (spans: CollectedSpan[], name: string) => spans.find((span) => span.name === name);
    await eventually(async () => ofTrace('lead-intake-worker').some((span) => span.kind === CLIENT), 30_000, 100);

    const served = ofTrace('lead-intake-api');
    const server = served.find((span) => span.kind === SERVER)!;
    expect(server).toMatchObject({ name: 'POST /api/v1/leads', parentSpanId: callerSpanId, attributes: expect.objectContaining({ 'http.response.status_code': 201 }) });
    const group = named(served, 'leads write group')!;
    expect(group).toBeDefined();
    expect(group.links.filter((link) => link.traceId === traceId)).toHaveLength(1);
    const statements = served.filter((span) => span.attributes['db.system.name'] === 'postgresql' || span.attributes['db.system'] === 'postgresql');
    expect(statements.filter((span) => span.parentSpanId === group.spanId).length).toBeGreaterThan(0);

    if (readTestEnvironment().redisUrl)
      expect(served.filter((span) => span.attributes['db.system.name'] === 'redis' || span.attributes['db.system'] === 'redis').length).toBeGreaterThan(0);

    const worked = ofTrace('lead-intake-worker');
    expect(named(worked, 'outbox fan-out')).toBeDefined();
    const delivery = named(worked, 'webhook workflow delivery') ?? named(worked, 'webhook lead delivery');
    expect(delivery).toBeDefined();
    const outbound = worked.find((span) => span.kind === CLIENT)!;
    expect(outbound.parentSpanId).toBe(delivery!.spanId);
    expect(webhook.headers.traceparent).toBe(`00-${traceId}-${outbound.spanId}-01`);

    // The delivery log names the attempt's trace.
    const [listed] = await cliJson<Array<{ id: number }>>(database.url, ['deliveries', 'list', '--workspace', String(tenant.workspaceId)]);
    const shown = await cliJson<{ attempt_log: Array<{ trace_id: string | null }> }>(database.url, ['deliveries', 'show', '--id', String(listed!.id)]);
    expect(shown.attempt_log.map((attempt) => attempt.trace_id)).toEqual([traceId]);

    // A log line written inside a span names it: the request's.
    expect(api.logs.filter((line) => line.trace_id === traceId).map((line) => served.some((span) => span.spanId === line.span_id))).toContain(true);
  }, 180_000);
});

describe('tracing with no OpenTelemetry variable set', () => {
  it('loads no module of the SDK, its exporters or its instrumentations', async () => {
    const tenant = await createTenant(db, { name: 'Untraced Sales' });
    const list = path.join(mkdtempSync(path.join(tmpdir(), 'loaded-modules-')), 'api.txt');
    const url = await apiUrl(start('main.js', {}, list));
    expect((await postLead(url, tenant, { name: 'Ada', email: 'ada@engine.test', enrich: false }, { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` })).status).toBe(201);
    const loaded = readFileSync(list, 'utf8').split('\n');
    // The list holds what the process imports (so an empty list proves nothing) ...
    expect(loaded.some((url) => url.includes('/node_modules/express/'))).toBe(true);
    expect(loaded.some((url) => url.includes('/node_modules/pg/'))).toBe(true);
    // ... and nothing of the SDK: only the API package, which does nothing without it.
    expect(loaded.filter((url) => /@opentelemetry\/(?!api\/)|import-in-the-middle|\/tracing\/sdk\.js/.test(url))).toEqual([]);
  }, 360_000);
});
