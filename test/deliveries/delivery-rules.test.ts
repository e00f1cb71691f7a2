import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import { sql } from 'kysely';
import { retryDelayMs } from '../../src/deliveries/attempt.js';
import { WorkerContext } from '../../src/worker/context.js';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, deliveries, drain, drainUntilBranch, outboundTestBed, workflowTo } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

// Every test starts CLI processes (a workflow or connector per case, each a node start-up) and
// drains the worker: on a loaded machine more than the default 30 s.
jest.setTimeout(90_000);

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

let sequence = 0;
const newLead = async (tenant: Tenant) => {
  const response = await t.http
    .post('/api/v1/leads')
    .set(tenant.auth)
    .send({ name: 'Grace Hopper', email: `grace${++sequence}@navy.test`, enrich: false });
  expect(response.status).toBe(201);
  return response.body.data.id as number;
};

/** A workspace whose lead_created workflow posts to `url`; returns the tenant. */
async function workspaceWithWorkflow(url: string): Promise<Tenant> {
  const tenant = await createTenant(t.ctx.db);
  await workflowTo(t, tenant, url);
  return tenant;
}

/**
 * Makes any retry of the workspace's deliveries due at once: a drain after it sends every
 * retry that was scheduled, so "sent once" is proven without waiting on the clock.
 */
const retriesFallDueNow = (workspaceId: number) =>
  t.ctx.db
    .updateTable('deliveries')
    .set({ next_attempt_at: sql<Date>`now() - interval '1 day'` })
    .where('workspace_id', '=', workspaceId)
    .execute();

const attemptsOf = async (deliveryId: number) => t.ctx.db.selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('attempt').execute();

describe('retries', () => {
  it('waits exponentially longer with jitter between half and all of the backoff, and honours Retry-After (the schedule)', () => {
    expect(retryDelayMs(1000, 1, null, () => 0)).toBe(500);
    expect(retryDelayMs(1000, 1, null, () => 1)).toBe(1000);
    expect(retryDelayMs(1000, 3, null, () => 1)).toBe(4000);
    expect(retryDelayMs(1000, 1, 60_000, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(1000, 40, null, () => 1)).toBe(24 * 60 * 60 * 1000);
  });

  it('retries a 503 and records exactly one success under the same webhook-id', async () => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/flaky`);
    receiver.queue({ status: 503, body: 'busy' });
    const leadId = await newLead(tenant);
    await drain(t);
    await drainUntilBranch(t, tenant.workspaceId, 'Delivered');

    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[0]!.headers['webhook-id']).toBe(receiver.requests[1]!.headers['webhook-id']);
    expect(receiver.requests[0]!.body).toBe(receiver.requests[1]!.body);
    const [delivery] = await deliveries(t, tenant.workspaceId, leadId);
    expect(delivery).toMatchObject({ branch: 'Delivered', attempts: 2, status_code: 200, error: null });
    const attempts = await attemptsOf(delivery!.id);
    expect(attempts.map((attempt) => attempt.status_code)).toEqual([503, 200]);
    expect(attempts[0]!.reply).toBe('busy');
  });

  it('sends 400 once, and gives up on a 5xx after WEBHOOK_MAX_ATTEMPTS attempts', async () => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/bad`);
    receiver.fallback = { status: 400, body: '{"message":"bad field"}' };
    await newLead(tenant);
    await drain(t);
    await retriesFallDueNow(tenant.workspaceId);
    await drain(t);
    expect(receiver.requests).toHaveLength(1);
    expect((await deliveries(t, tenant.workspaceId))[0]).toMatchObject({ branch: 'Failed', attempts: 1, status_code: 400, error: 'HTTP 400 from the receiver' });

    receiver.reset();
    receiver.fallback = { status: 500 };
    const broken = await workspaceWithWorkflow(`${receiver.url}/down`);
    await newLead(broken);
    await drainUntilBranch(t, broken.workspaceId, 'Failed');
    expect(receiver.requests).toHaveLength(3);
    expect((await deliveries(t, broken.workspaceId))[0]).toMatchObject({ attempts: 3, status_code: 500, error: expect.stringMatching(/gave up after 3 attempts/) });
  });

  it.each([401, 404])('sends %i once, like every 4xx but 408 and 429', async (status) => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/refusing`);
    receiver.fallback = { status };
    await newLead(tenant);
    await drain(t);
    await retriesFallDueNow(tenant.workspaceId);
    await drain(t);
    expect(receiver.requests).toHaveLength(1);
    expect((await deliveries(t, tenant.workspaceId))[0]).toMatchObject({ branch: 'Failed', attempts: 1, status_code: status, error: `HTTP ${status} from the receiver` });
  });

  it('retries a 408 and delivers on the next attempt', async () => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/timed-out`);
    receiver.queue({ status: 408 });
    await newLead(tenant);
    await drainUntilBranch(t, tenant.workspaceId, 'Delivered');
    expect(receiver.requests.map((request) => request.path)).toEqual(['/timed-out', '/timed-out']);
    expect((await deliveries(t, tenant.workspaceId))[0]).toMatchObject({ branch: 'Delivered', attempts: 2, status_code: 200 });
  });

  it('honours Retry-After on 429 and retries connection failures', async () => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/slow-down`);
    receiver.queue({ status: 429, headers: { 'retry-after': '120' } });
    await newLead(tenant);
    await drain(t);
    const [delivery] = await deliveries(t, tenant.workspaceId);
    expect(delivery).toMatchObject({ branch: 'pending', attempts: 1, status_code: 429 });
    const row = await t.ctx.db.selectFrom('deliveries').select('next_attempt_at').where('id', '=', delivery!.id).executeTakeFirstOrThrow();
    expect(Date.parse(row.next_attempt_at) - Date.now()).toBeGreaterThan(100_000);

    // Nothing listens on this port: a connection failure, retried until it gives up.
    const closed = await workspaceWithWorkflow('http://127.0.0.1:9/refused');
    await newLead(closed);
    await drainUntilBranch(t, closed.workspaceId, 'Failed');
    expect((await deliveries(t, closed.workspaceId))[0]).toMatchObject({ attempts: 3, status_code: null, error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('a receiver slower than WEBHOOK_TIMEOUT_MS is a connection failure: timed out, and retried', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/slow`]);
    receiver.fallback = { status: 200, body: '{}', delayMs: 3000 };
    const leadId = await newLead(tenant);
    const pushed = await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)]);
    expect(pushed).toMatchObject({ delivered: false, status: null, branch: 'pending', attempts: 1, error: expect.stringMatching(/timeout/) });

    receiver.fallback = { status: 200, body: '{}' };
    await drainUntilBranch(t, tenant.workspaceId, 'Delivered', leadId);
    expect((await deliveries(t, tenant.workspaceId, leadId))[0]).toMatchObject({ attempts: 2, status_code: 200 });
  });

  it('never follows a redirect: a 3xx is a failed delivery, sent once', async () => {
    const tenant = await workspaceWithWorkflow(`${receiver.url}/moved`);
    receiver.fallback = { status: 302, headers: { location: `${receiver.url}/elsewhere` } };
    await newLead(tenant);
    await drain(t);
    await drain(t);
    expect(receiver.requests.map((request) => request.path)).toEqual(['/moved']);
    expect((await deliveries(t, tenant.workspaceId))[0]).toMatchObject({ branch: 'Failed', attempts: 1, status_code: 302, error: expect.stringMatching(/redirect/) });
  });

  it('a block is Delivered on any 2xx even when the body reports a problem; the connector push reads the body', async () => {
    receiver.fallback = { status: 200, body: '{"success":false,"error":"duplicate contact"}', headers: { 'content-type': 'application/json' } };
    const tenant = await workspaceWithWorkflow(`${receiver.url}/block`);
    const leadId = await newLead(tenant);
    await drain(t);
    expect((await deliveries(t, tenant.workspaceId))[0]).toMatchObject({ branch: 'Delivered', status_code: 200 });

    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    const pushed = await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)]);
    expect(pushed).toMatchObject({ delivered: false, status: 200, error: expect.stringMatching(/success: false/) });
    expect((await deliveries(t, tenant.workspaceId, leadId)).at(-1)).toMatchObject({ sender: 'connector_push', branch: 'Failed', attempts: 1 });
  });

  it('only the connector push stores the receiver record id on the lead', async () => {
    receiver.fallback = { status: 201, body: '{"id":"crm-42"}', headers: { 'content-type': 'application/json' } };
    const tenant = await workspaceWithWorkflow(`${receiver.url}/block`);
    const leadId = await newLead(tenant);
    await drain(t);
    const crmRecordId = async () => (await t.ctx.db.selectFrom('leads').select('crm_record_id').where('id', '=', leadId).executeTakeFirstOrThrow()).crm_record_id;
    expect(await crmRecordId()).toBeNull();

    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    expect(await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)])).toMatchObject({ delivered: true, status: 201, reply: '{"id":"crm-42"}' });
    expect(await crmRecordId()).toBe('crm-42');
  });
});

describe('Send test', () => {
  it('sends event test once, never retries, and keeps far more of the reply than a push', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/test`]);
    receiver.fallback = { status: 503, body: 'x'.repeat(10_000) };
    const tested = await cli(t, ['connector', 'test', '--id', String(connector.id)]);
    expect(tested).toMatchObject({ delivered: false, status: 503, error: 'HTTP 503 from the receiver' });
    expect((tested.reply as string).length).toBe(10_000);
    await retriesFallDueNow(tenant.workspaceId);
    await drain(t);
    expect(receiver.requests).toHaveLength(1);
    expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({ event: 'test', lead_id: null, sent_at: expect.any(String) });

    receiver.fallback = { status: 200, body: 'y'.repeat(10_000) };
    const leadId = await newLead(tenant);
    const pushed = await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)]);
    expect(pushed).toMatchObject({ delivered: true, status: 200 });
    expect((pushed.reply as string).length).toBe(2048);
  });
});

describe('network rules', () => {
  let tenant: Tenant;
  let leadId: number;
  beforeAll(async () => {
    tenant = await createTenant(t.ctx.db);
    leadId = await newLead(tenant);
  });
  const strict = () => ({ ...t.ctx, config: { ...t.ctx.config, WEBHOOKS_ALLOW_PRIVATE_NETWORKS: false } });

  it('refuses loopback by IP and by name without the switch, and calls nothing', async () => {
    for (const url of [`${receiver.url}/ip`, `http://localhost:${receiver.port}/name`, `http://[::ffff:127.0.0.1]:${receiver.port}/mapped`]) {
      const strictTenant = await workspaceWithWorkflow(url);
      await newLead(strictTenant);
      await new WorkerContext(strict()).processAll();
      const [delivery] = await deliveries(t, strictTenant.workspaceId);
      expect(delivery).toMatchObject({ branch: 'Failed', status_code: null, error: expect.stringMatching(/^refused: .*(private|loopback)/) });
    }
    expect(receiver.requests).toHaveLength(0);
    const push = await cli(
      t,
      [
        'connector',
        'push',
        '--id',
        String((await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/x`])).id),
        '--lead',
        String(leadId),
      ],
      { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'false' },
    );
    expect(push).toMatchObject({ delivered: false, status: null, error: expect.stringMatching(/^refused/) });
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses the cloud metadata hosts even with the switch on', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://metadata.google.internal/computeMetadata/v1/', 'http://[::ffff:a9fe:a9fe]/']) {
      const metadataTenant = await workspaceWithWorkflow(url);
      await newLead(metadataTenant);
      await drain(t);
      expect((await deliveries(t, metadataTenant.workspaceId))[0]).toMatchObject({ branch: 'Failed', status_code: null, error: expect.stringMatching(/metadata/) });
    }
  });

  it('refuses credentials in the URL, other schemes, an empty or unresolvable Custom URL, and a missing or deleted connector', async () => {
    expect(await cliRefused(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `http://user:pass@127.0.0.1:${receiver.port}/`])).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/Credentials/),
    });
    expect(await cliRefused(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', 'ftp://files.example.com/'])).toMatchObject({
      error: 'invalid_argument',
    });

    const misconfigured = await createTenant(t.ctx.db);
    const deleted = await cli(t, ['connector', 'create', '--workspace', String(misconfigured.workspaceId), '--url', `${receiver.url}/gone`]);
    const foreign = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/foreign`]);
    expect(await cli(t, ['connector', 'delete', '--id', String(deleted.id)])).toEqual({ id: deleted.id, deleted: true, cancelled_deliveries: 0 });
    const configurations = [
      ['--url', ''],
      ['--url', '{{lead.job_title}}'],
      ['--url', `http://u:p@127.0.0.1:${receiver.port}/{{lead.id}}`],
      ['--url', 'gopher://127.0.0.1/'],
      ['--url', 'http://no-such-host.invalid/'],
      ['--connector', String(deleted.id)],
      ['--connector', String(foreign.id)],
      ['--connector', '999999'],
    ];
    const warningCounts: number[] = [];
    for (const endpoint of configurations) {
      const created = await cli(t, ['workflow', 'create', '--workspace', String(misconfigured.workspaceId), '--trigger', 'lead_created', ...endpoint]);
      warningCounts.push((created.warnings as unknown[] | undefined)?.length ?? 0);
    }
    // An empty URL and a connector that is deleted, foreign or missing are warned about when created.
    expect(warningCounts).toEqual(configurations.map((endpoint) => (endpoint[0] === '--connector' || endpoint[1] === '' ? 1 : 0)));
    const failedLead = await newLead(misconfigured);
    await drain(t);
    const listed = await deliveries(t, misconfigured.workspaceId, failedLead);
    expect(listed).toHaveLength(configurations.length);
    expect(listed.map((delivery) => [delivery.branch, delivery.status_code])).toEqual(configurations.map(() => ['Failed', null]));
    expect(listed.map((delivery) => delivery.error)).toEqual([
      expect.stringMatching(/empty/),
      expect.stringMatching(/empty/),
      expect.stringMatching(/Credentials/),
      expect.stringMatching(/http and https/),
      expect.stringMatching(/could not be resolved/),
      expect.stringMatching(/deleted/),
      expect.stringMatching(/does not exist in this workspace/),
      expect.stringMatching(/does not exist in this workspace/),
    ]);
    // Of this lead: an earlier test's delivery, due again after its Retry-After, may arrive meanwhile.
    const leadOf = (body: string) => {
      try {
        return (JSON.parse(body) as { lead_id?: unknown }).lead_id;
      } catch {
        return undefined;
      }
    };
    expect(receiver.requests.filter((request) => leadOf(request.body) === failedLead)).toHaveLength(0);
  });
});
