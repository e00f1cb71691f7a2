import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { pino } from 'pino';
import { createDb, createPool, type Db } from '../../src/db/connect.js';
import { jsonParameter } from '../../src/db/sql.js';
import { cliJson } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { scrape, type Samples } from '../support/metrics.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../support/service.js';

// GET /metrics of the compiled processes: `npm start` (API with its in-process worker) and
// `npm run worker`. Known traffic is sent, and every counter must have moved by exactly
// what was sent.

const RATE_LIMIT = 10;
const HTML = { status: 200, body: '<html><head><title>Anvil Works</title></head></html>', headers: { 'content-type': 'text/html' } };

let database: TestDatabase;
let db: Db;
let receiver: Receiver;
const processes: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(createPool(database.url, 2, { logger: pino({ level: 'silent' }), name: 'test' }));
  receiver = await startReceiver({ databaseUrl: database.url });
});
afterAll(async () => {
  await Promise.all(processes.map((service) => service.stop()));
  await receiver?.close();
  await db?.destroy();
  await database?.drop();
});

/** The process on ports the system picks (0), read back from its log lines. */
async function start(entry: 'main.js' | 'worker-main.js', env: Record<string, string>): Promise<{ api: string; metrics: string }> {
  const service = startService(process.execPath, [path.join(ROOT, 'dist', 'src', entry)], {
    env: {
      ...baseEnvironment(),
      DATABASE_URL: database.url,
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      OUTBOX_POLL_MS: '50',
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_TIMEOUT_MS: '2000',
      ...env,
    },
  });
  processes.push(service);
  const metrics = String((await service.waitForLog('metrics listening')).url);
  const api = entry === 'main.js' ? String((await service.waitForLog('Lead Intake API listening')).url).replace(/\/api\/v1$/, '') : '';
  return { api, metrics };
}

const cli = (args: string[]) => cliJson(database.url, args);

/** What moved between two scrapes: after minus before (a missing sample counts 0). */
const moved =
  (before: Samples, after: Samples) =>
  (name: string, labels: Record<string, string> = {}) =>
    after.value(name, labels) - before.value(name, labels);

describe('GET /metrics of npm start (API and in-process worker)', () => {
  let urls: { api: string; metrics: string };
  let alice: Tenant;
  let bob: Tenant;
  /** Every answer of the public API, by operation and status, as the client saw it. */
  const answers = new Map<string, number>();

  async function send(tenant: Tenant, operation: string, method: string, route: string, options: { body?: unknown; idempotencyKey?: string } = {}) {
    const response = await fetch(`${urls.api}/api/v1${route}`, {
      method,
      headers: {
        ...tenant.auth,
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const key = `${operation} ${response.status}`;
    answers.set(key, (answers.get(key) ?? 0) + 1);
    return { status: response.status, body: (await response.json()) as any, replayed: response.headers.get('idempotency-replayed') === 'true' };
  }

  beforeAll(async () => {
    alice = await createTenant(db, { name: 'Alice Sales' });
    bob = await createTenant(db, { name: 'Bob Sales' });
    await cli(['workflow', 'create', '--workspace', String(alice.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/hook`]);
    await cli(['workflow', 'create', '--workspace', String(alice.workspaceId), '--trigger', 'tag_added', '--tag', 'vip', '--url', `${receiver.url}/refuse`]);
    receiver.routes['/refuse'] = { status: 400, body: 'no' };
    receiver.routes['/site'] = HTML;
    receiver.routes['/gone'] = { status: 404, body: 'gone' };
    // The first webhook to /hook is answered 503: retried, then delivered.
    receiver.queue({ status: 503, body: 'busy' });
    urls = await start('main.js', { RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), DATABASE_POOL_SIZE: '7' });
  }, 120_000);

  it('counts requests, intake outcomes, replays, 429s, deliveries, retries and analyses exactly as sent', async () => {
    const before = await scrape(urls.metrics);

    const ada = { name: 'Ada', email: 'ada@gmail.com' };
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: ada })).status).toBe(201);
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: { ...ada, job_title: 'CTO' } })).body.meta.status).toBe('updated');
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: { ...ada, on_duplicate: 'skip' } })).body.meta.status).toBe('skipped');
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: { ...ada, on_duplicate: 'error' } })).status).toBe(409);
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: { ...ada, tags: ['vip'] } })).body.meta.status).toBe('updated');
    const bo = { name: 'Bo', email: 'bo@anvil.test', company: { website: `${receiver.url}/site` } };
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: bo, idempotencyKey: 'bo-1' })).status).toBe(201);
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: bo, idempotencyKey: 'bo-1' })).replayed).toBe(true);
    const batch = await send(alice, 'createLeadsBatch', 'POST', '/leads/batch', {
      body: { on_duplicate: 'error', leads: [{ name: 'Cy', email: 'cy@gmail.com' }, ada, { name: 'Dee', email: 'dee@gmail.com', tag_ids: [999999] }] },
    });
    expect(batch.body).toMatchObject({ meta: { created: 1, failed: 2 } });
    expect((await send(alice, 'createLead', 'POST', '/leads', { body: { name: 'Dry', email: 'dry@gmail.com', dry_run: true } })).status).toBe(200);
    expect((await send(alice, 'getLead', 'GET', '/leads/999999')).status).toBe(404);
    // Bob: a lead whose company website is gone, then GET /me until the limit answers 429.
    expect((await send(bob, 'createLead', 'POST', '/leads', { body: { name: 'Eve', email: 'eve@gone.test', company: { website: `${receiver.url}/gone` } } })).status).toBe(201);
    let limited = 0;
    for (let sent = 0; sent < 2 * RATE_LIMIT && limited === 0; sent += 1) if ((await send(bob, 'getMe', 'GET', '/me')).status === 429) limited += 1;
    expect(limited).toBe(1);

    // The worker has delivered Ada's, Bo's and Cy's lead_created webhooks (Ada's after one
    // retry), refused the tag_added one (400: Failed), and analyzed both websites.
    let after = before;
    await eventually(
      async () => {
        after = await scrape(urls.metrics);
        const delta = moved(before, after);
        return (
          delta('lead_intake_deliveries_total', { branch: 'Delivered', sender: 'custom_url' }) === 3 &&
          delta('lead_intake_website_analyses_total', { result: 'analyzed' }) + delta('lead_intake_website_analyses_total', { result: 'failed' }) === 2 &&
          delta('lead_intake_deliveries_total', { branch: 'Failed', sender: 'custom_url' }) === 1 &&
          ['lead.created', 'lead.tag_added', 'company.analyze'].every((topic) => after.value('lead_intake_outbox_pending_events', { topic }) === 0)
        );
      },
      30_000,
      100,
    );
    const delta = moved(before, after);

    for (const [key, count] of answers) {
      const [operation, status] = key.split(' ') as [string, string];
      expect({ key, count: delta('lead_intake_http_request_duration_seconds_count', { operation, status }) }).toEqual({ key, count });
    }
    const timed =
      after.all('lead_intake_http_request_duration_seconds_count').reduce((sum, sample) => sum + sample.value, 0) -
      before.all('lead_intake_http_request_duration_seconds_count').reduce((sum, sample) => sum + sample.value, 0);
    expect(timed).toBe([...answers.values()].reduce((sum, count) => sum + count, 0));
    expect(delta('lead_intake_http_rate_limited_requests_total')).toBe(1);

    const rows = (operation: string) =>
      Object.fromEntries(['created', 'updated', 'skipped', 'duplicate', 'failed'].map((outcome) => [outcome, delta('lead_intake_intake_rows_total', { operation, outcome })]));
    // Ada, Bo and Eve created; the replay and the dry run are no rows.
    expect(rows('createLead')).toEqual({ created: 3, updated: 2, skipped: 1, duplicate: 1, failed: 0 });
    expect(rows('createLeadsBatch')).toEqual({ created: 1, updated: 0, skipped: 0, duplicate: 1, failed: 1 });
    expect(delta('lead_intake_idempotent_replays_total', { operation: 'createLead' })).toBe(1);
    expect(delta('lead_intake_idempotent_replays_total', { operation: 'createLeadsBatch' })).toBe(0);

    expect(delta('lead_intake_delivery_retries_scheduled_total')).toBe(1);
    expect(delta('lead_intake_delivery_attempt_duration_seconds_count')).toBe(5);
    expect(delta('lead_intake_website_analyses_total', { result: 'analyzed' })).toBe(1);
    expect(delta('lead_intake_website_analyses_total', { result: 'failed' })).toBe(1);

    for (const topic of ['lead.created', 'lead.tag_added', 'company.analyze']) {
      expect(after.value('lead_intake_outbox_pending_events', { topic })).toBe(0);
      expect(after.value('lead_intake_outbox_oldest_pending_age_seconds', { topic })).toBe(0);
    }
    for (const sender of ['custom_url', 'saved_connector', 'connector_push', 'test']) expect(after.has('lead_intake_deliveries_due', { sender })).toBe(true);
    expect(after.value('lead_intake_db_pool_max_connections', { pool: 'api' })).toBe(7);
    expect(after.value('lead_intake_db_pool_max_connections', { pool: 'worker' })).toBe(4);
    for (const pool of ['api', 'worker']) {
      expect(after.has('lead_intake_db_pool_connections_in_use', { pool })).toBe(true);
      expect(after.has('lead_intake_db_pool_waiting_requests', { pool })).toBe(true);
    }
    expect(after.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(after.has('nodejs_eventloop_lag_seconds')).toBe(true);
  }, 90_000);

  it('serves only /metrics on its port, and the public port has no /metrics', async () => {
    const other = await fetch(urls.metrics.replace('/metrics', '/api/v1/me'));
    expect(other.status).toBe(404);
    expect((await fetch(urls.metrics, { method: 'POST' })).status).toBe(405);
    const publicPort = await fetch(`${urls.api}/metrics`);
    expect(publicPort.status).toBe(404);
  });
});

describe('GET /metrics of npm run worker', () => {
  it('reports the outbox backlog, the worker pool and the process', async () => {
    // Two events of a workspace, not due for an hour, the older written ten minutes ago.
    const tenant = await createTenant(db, { name: 'Backlog' });
    await db
      .insertInto('outbox')
      .values(
        [0, 300].map((agoSeconds) => ({
          workspace_id: tenant.workspaceId,
          topic: 'lead.tag_added',
          payload: jsonParameter({ lead_id: 1, tag_id: 1 }),
          available_at: new Date(Date.now() + 3_600_000).toISOString(),
          created_at: new Date(Date.now() - 600_000 + agoSeconds * 1000).toISOString(),
        })),
      )
      .execute();
    const { metrics } = await start('worker-main.js', { DATABASE_POOL_SIZE: '3' });
    // A scrape whose backlog read does not answer in time leaves the backlog's series out (a
    // loaded machine, or Citus asking every shard): the next one has them.
    let samples = await scrape(metrics);
    await eventually(async () => (samples = await scrape(metrics)).has('lead_intake_outbox_pending_events', { topic: 'lead.tag_added' }), 20_000, 250);
    expect(samples.value('lead_intake_outbox_pending_events', { topic: 'lead.tag_added' })).toBe(2);
    expect(samples.value('lead_intake_outbox_oldest_pending_age_seconds', { topic: 'lead.tag_added' })).toBeGreaterThanOrEqual(600);
    expect(samples.value('lead_intake_outbox_oldest_pending_age_seconds', { topic: 'lead.tag_added' })).toBeLessThan(900);
    expect(samples.value('lead_intake_db_pool_max_connections', { pool: 'worker' })).toBe(3);
    expect(samples.has('lead_intake_db_pool_max_connections', { pool: 'api' })).toBe(false);
    expect(samples.has('process_resident_memory_bytes')).toBe(true);
    await db.deleteFrom('outbox').where('workspace_id', '=', tenant.workspaceId).execute();
  }, 120_000);
});
