import { beforeAll, describe, expect, it } from '@jest/globals';
import { createConnector, deleteConnector, testConnector } from '../../src/connectors/service.js';
import { failedDelivery } from '../../src/deliveries/compose.js';
import { insertDeliveries, listDeliveries, type DeliveryListItem } from '../../src/deliveries/repository.js';
import { showDelivery } from '../../src/deliveries/service.js';
import { createWorkflow } from '../../src/workflows/service.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, outboundTestBed, plainConnector, postNewPerson } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { OPERATOR } from '../../src/audit/service.js';

// The operator's delivery tools: deliveries show / replay / list filters, pausing workflows,
// listing connectors. Setup goes through the services; each command under test runs once
// through the compiled CLI (a node process each, slow under load).

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const newLead = (tenant: Tenant) => postNewPerson(t, tenant);

const workflowTo = (tenant: Tenant, url: string, headers: Array<{ key: string; value: string }> = []) =>
  createWorkflow(t.ctx.db, OPERATOR, {
    workspaceId: tenant.workspaceId,
    trigger: 'lead_created',
    block: { endpoint: 'url', url, method: 'POST', format: 'json', headers, fields: [] },
  });

/** The workspace's deliveries, oldest first, read without the CLI. */
const listed = (tenant: Tenant) => listDeliveries(t.ctx.db, tenant.workspaceId, {});

/** Drains, retries included as they fall due, until the workspace's newest delivery is on `branch`. */
const drainUntil = (tenant: Tenant, branch: DeliveryListItem['branch']) =>
  eventually(
    async () => {
      await drain(t);
      return (await listed(tenant)).at(-1)?.branch === branch;
    },
    10000,
    50,
  );

describe('deliveries show and replay', () => {
  const BEARER = 'Bearer tok_live_0123456789abcdef';
  const API_KEY = 'key_9876543210fedcba';
  const QUERY_TOKEN = 'qs_secret_value_12345';

  it('show prints the request with credentials masked and every attempt; replay sends it again as a new series under the same webhook-id', async () => {
    const tenant = await createTenant(t.ctx.db);
    await workflowTo(tenant, `${receiver.url}/hook?team=sales&token=${QUERY_TOKEN}`, [
      { key: 'Authorization', value: BEARER },
      { key: 'X-Api-Key', value: API_KEY },
      { key: 'X-Team', value: 'sales' },
    ]);
    receiver.fallback = { status: 500, body: 'down for maintenance' };
    await newLead(tenant);
    await drainUntil(tenant, 'Failed');
    const [delivery] = await listed(tenant);
    const sent = receiver.requests[0]!;
    expect(sent.headers.authorization).toBe(BEARER);

    const shown = await cli(t, ['deliveries', 'show', '--id', String(delivery!.id)]);
    for (const secret of [BEARER, API_KEY, QUERY_TOKEN, 'tok_live']) expect(JSON.stringify(shown)).not.toContain(secret);
    expect(shown).toMatchObject({ id: delivery!.id, branch: 'Failed', series: 1, attempts: 3, max_attempts: 3, status_code: 500, message_id: sent.headers['webhook-id'] });
    expect(shown.request).toEqual({
      method: 'POST',
      url: `${receiver.url}/hook?team=sales&token=${encodeURIComponent('****2345')}`,
      headers: expect.objectContaining({ Authorization: '****cdef', 'X-Api-Key': '****dcba', 'X-Team': 'sales', 'webhook-id': sent.headers['webhook-id'] }),
      body: sent.body,
    });
    expect(shown.attempt_log).toEqual(
      [1, 2, 3].map((attempt) => ({
        series: 1,
        attempt,
        at: expect.stringMatching(/^\d{4}-.*Z$/),
        duration_ms: expect.any(Number),
        status_code: 500,
        error: expect.stringMatching(/HTTP 500/),
        reply: 'down for maintenance',
        // Untraced (no OpenTelemetry variable set): no trace id.
        trace_id: null,
      })),
    );

    receiver.reset();
    const replayed = await cli(t, ['deliveries', 'replay', '--id', String(delivery!.id)]);
    expect(replayed).toEqual({ id: delivery!.id, message_id: sent.headers['webhook-id'], series: 2, attempts: 0, branch: 'pending', next_attempt_at: expect.any(String) });
    expect(await cliRefused(t, ['deliveries', 'replay', '--id', String(delivery!.id)])).toMatchObject({ error: 'delivery_pending' });
    await drainUntil(tenant, 'Delivered');
    expect(receiver.requests.map((request) => [request.headers['webhook-id'], request.body])).toEqual([[sent.headers['webhook-id'], sent.body]]);

    const afterReplay = await showDelivery(t.ctx.db, delivery!.id, tenant.workspaceId);
    expect(afterReplay).toMatchObject({ branch: 'Delivered', series: 2, attempts: 1, status_code: 200, error: null });
    expect(afterReplay.attempt_log.map((attempt) => [attempt.series, attempt.attempt, attempt.status_code])).toEqual([
      [1, 1, 500],
      [1, 2, 500],
      [1, 3, 500],
      [2, 1, 200],
    ]);
  });

  it("show masks the header of a connector's header authentication, whatever its name", async () => {
    const tenant = await createTenant(t.ctx.db);
    const secret = 'partner-secret-value-1234';
    const connector = await createConnector(t.ctx.db, OPERATOR, {
      workspace_id: tenant.workspaceId,
      url: `${receiver.url}/crm`,
      method: 'POST',
      format: 'json',
      auth: { type: 'header', name: 'X-Partner', value: secret },
      mapping: [],
      fields: [],
      headers: [],
      auto_push: false,
    });
    const { delivery_id: deliveryId } = await testConnector(t.ctx, connector.id, tenant.workspaceId);
    expect(receiver.requests[0]!.headers['x-partner']).toBe(secret);
    expect(JSON.stringify(await showDelivery(t.ctx.db, deliveryId, tenant.workspaceId))).not.toContain(secret);
  });

  it('refuses what it cannot show or replay: an unknown id, a delivery that was never sent', async () => {
    const tenant = await createTenant(t.ctx.db);
    const [neverSent] = await insertDeliveries(t.ctx.db, [
      failedDelivery(
        { workspaceId: tenant.workspaceId, trigger: 'lead_created', maxAttempts: 3 },
        { event: 'workflow', sender: 'custom_url', leadId: null, url: '', error: 'The Custom URL is empty.' },
      ),
    ]);
    expect(await cliRefused(t, ['deliveries', 'replay', '--id', String(neverSent)])).toMatchObject({ error: 'not_replayable', message: expect.stringMatching(/never sent/) });
    expect(await cliRefused(t, ['deliveries', 'show', '--id', '987654321'])).toMatchObject({ error: 'not_found' });
  });
});

describe('deliveries list filters', () => {
  let tenant: Tenant;
  let ids: number[];
  beforeAll(async () => {
    receiver.reset();
    tenant = await createTenant(t.ctx.db);
    await workflowTo(tenant, `${receiver.url}/listed`);
    receiver.queue({ status: 400 });
    for (let lead = 0; lead < 3; lead += 1) {
      await newLead(tenant);
      await drain(t);
    }
    ids = (await listed(tenant)).map((delivery) => delivery.id);
  });
  const list = (...args: string[]) => cli<DeliveryListItem[]>(t, ['deliveries', 'list', '--workspace', String(tenant.workspaceId), ...args]);

  it('oldest first; --branch, --since, and --limit keeping the newest', async () => {
    expect(ids).toHaveLength(3);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect((await list()).map((delivery) => delivery.id)).toEqual(ids);
    expect((await list('--branch', 'Failed')).map((delivery) => [delivery.id, delivery.status_code])).toEqual([[ids[0], 400]]);
    expect((await list('--limit', '2')).map((delivery) => delivery.id)).toEqual(ids.slice(1));
    const second = (await listed(tenant))[1]!;
    expect((await list('--since', second.created_at, '--branch', 'Delivered')).map((delivery) => delivery.id)).toEqual(ids.slice(1));
  });

  it('refuses a bad --since, --limit or --branch with a JSON error', async () => {
    expect(await cliRefused(t, ['deliveries', 'list', '--workspace', String(tenant.workspaceId), '--since', 'yesterday'])).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/--since/),
    });
    expect(await cliRefused(t, ['deliveries', 'list', '--workspace', String(tenant.workspaceId), '--limit', '1001'])).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/--limit/),
    });
    expect(await cliRefused(t, ['deliveries', 'list', '--workspace', String(tenant.workspaceId), '--branch', 'delivered'])).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/--branch/),
    });
  });
});

describe('pausing workflows', () => {
  it('a deactivated workflow sends nothing, not even after it is activated again; then new leads are sent', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await workflowTo(tenant, `${receiver.url}/paused`, [{ key: 'Authorization', value: 'Bearer workflow-secret-token' }]);
    const [shown] = await cli<Array<Record<string, any>>>(t, ['workflow', 'list', '--workspace', String(tenant.workspaceId)]);
    expect(shown).toMatchObject({ id: workflow.id, trigger: 'lead_created', tag: null, active: true, active_since: null });
    expect(shown).not.toHaveProperty('signing_secret');
    expect(shown!.block.headers).toEqual([{ key: 'Authorization', value: '****oken' }]);

    expect(await cli(t, ['workflow', 'deactivate', '--id', String(workflow.id)])).toEqual({ id: workflow.id, active: false });
    await newLead(tenant);
    await drain(t);
    await newLead(tenant); // still paused, and the worker only reaches it once the workflow is active again
    expect(await cli(t, ['workflow', 'activate', '--id', String(workflow.id)])).toEqual({ id: workflow.id, active: true });
    const sentLead = await newLead(tenant);
    await drain(t);

    expect(receiver.requests.map((request) => [request.path, JSON.parse(request.body).lead_id])).toEqual([['/paused', sentLead]]);
    expect((await listed(tenant)).map((delivery) => delivery.lead_id)).toEqual([sentLead]);
    expect(await cliRefused(t, ['workflow', 'deactivate', '--id', '987654321'])).toMatchObject({ error: 'not_found' });
  });
});

describe('connector list', () => {
  it("lists the workspace's connectors that are not deleted, credentials masked, no signing secret", async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = (extra: object) => plainConnector(t.ctx.db, tenant.workspaceId, `${receiver.url}/crm`, extra);
    const kept = await connector({
      auth: { type: 'bearer', token: 'crm-token-0123456789' },
      headers: [
        { key: 'X-Api-Key', value: 'header-key-abcdefgh' },
        { key: 'X-Team', value: 'sales' },
      ],
    });
    await deleteConnector(t.ctx.db, OPERATOR, (await connector({})).id);

    const connectors = await cli<Array<Record<string, unknown>>>(t, ['connector', 'list', '--workspace', String(tenant.workspaceId)]);
    expect(connectors).toEqual([
      expect.objectContaining({
        id: kept.id,
        auth: { type: 'bearer', token: '****6789' },
        headers: [
          { key: 'X-Api-Key', value: '****efgh' },
          { key: 'X-Team', value: 'sales' },
        ],
      }),
    ]);
    expect(JSON.stringify(connectors)).not.toMatch(/crm-token|header-key|whsec_/);
  });
});
