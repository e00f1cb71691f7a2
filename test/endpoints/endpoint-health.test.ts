import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { pino } from 'pino';
import { listDeliveries } from '../../src/deliveries/repository.js';
import { WorkerContext } from '../../src/worker/context.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { parseMetrics } from '../support/metrics.js';
import { cli, cliRefused, outboundTestBed, postNewPerson } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

// Endpoint health as an operator meets it: a receiver down for longer than the window
// (ENDPOINT_DISABLE_AFTER_DAYS, 5 by default, with at least ENDPOINT_DISABLE_AFTER_FAILURES,
// 10, failed attempts in a row) gets its endpoint disabled; the list commands say why and since
// when; new events are recorded Failed, not sent; Send test still works; `enable` turns it
// back on. The clock is the database's: the test moves the start of the failures back in time.
// Deliveries are attempted 3 times each here (test environment).

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

/** The worker's log lines (the test app's own logger is silent). */
const logged: Array<{ msg: string; level: number }> = [];
const logger = pino(
  { level: 'info' },
  {
    write: (line: string) => {
      logged.push(JSON.parse(line));
    },
  },
);
const disablings = () => logged.filter((line) => / disabled: /.test(line.msg));

const listed = (tenant: Tenant) => listDeliveries(t.ctx.db, tenant.workspaceId, {});

/** Runs the worker, retries included as they fall due, until none of the workspace's deliveries is pending. */
const drainAll = (tenant: Tenant) =>
  eventually(
    async () => {
      await new WorkerContext({ ...t.ctx, logger }).processAll();
      return (await listed(tenant)).every((delivery) => delivery.branch !== 'pending');
    },
    15000,
    50,
  );

/** Posts `count` new people and lets the worker finish their deliveries. */
async function newEvents(tenant: Tenant, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await postNewPerson(t, tenant);
  await drainAll(tenant);
}

/** The clock: the endpoint's failures started this long ago instead (the database's now() stays). */
const failuresStartedHoursAgo = (kind: 'connector' | 'workflow', id: number, hours: number) =>
  sql`UPDATE endpoints SET failing_since = now() - make_interval(hours => ${hours}) WHERE kind = ${kind} AND endpoint_id = ${id}`.execute(t.ctx.db);

const disabledCount = async (kind: string) => parseMetrics(await t.ctx.metrics.registry.metrics()).value('lead_intake_endpoints_disabled_total', { kind });

describe('endpoint health', () => {
  it('disables a connector whose receiver was down for longer than the window, once; sends nothing new to it until `connector enable`', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`, '--auto-push']);
    const listedConnector = async () => (await cli(t, ['connector', 'list', '--workspace', String(tenant.workspaceId)]))[0];
    receiver.fallback = { status: 503, body: 'down' };
    const disabledBefore = await disabledCount('connector');

    // Four auto-pushes, three attempts each: failing, but not for 5 days yet.
    await newEvents(tenant, 4);
    expect(await listedConnector()).toMatchObject({ id: connector.id, disabled_at: null, disabled_reason: null, consecutive_failures: 12, failing_since: expect.any(String) });

    await failuresStartedHoursAgo('connector', connector.id, 5 * 24 + 1);
    await newEvents(tenant, 1);
    const disabled = await listedConnector();
    expect(disabled).toMatchObject({
      disabled_at: expect.any(String),
      disabled_reason: expect.stringMatching(/^every attempt failed since .*, 13 in a row and none delivered; the last: HTTP 503 from the receiver$/),
    });
    expect(disablings()).toEqual([expect.objectContaining({ endpoint: { kind: 'connector', id: connector.id }, reason: disabled.disabled_reason })]);
    expect(await disabledCount('connector')).toBe(disabledBefore + 1);
    // The fifth push was attempted once, then found its endpoint disabled.
    const fifth = (await listed(tenant)).at(-1)!;
    expect(fifth).toMatchObject({ branch: 'Failed', attempts: 2, error: expect.stringMatching(/^not sent: its endpoint is disabled since /) });

    // The receiver is back; the endpoint stays off: a new event is recorded Failed, not sent.
    receiver.reset();
    await newEvents(tenant, 1);
    expect(receiver.requests).toEqual([]);
    const sixth = (await listed(tenant)).at(-1)!;
    expect(sixth).toMatchObject({ branch: 'Failed', attempts: 1, status_code: null, error: expect.stringMatching(/^not sent: its endpoint is disabled since .*connector enable/) });
    expect(await cliRefused(t, ['deliveries', 'recover', '--connector', String(connector.id), '--since', disabled.disabled_at])).toMatchObject({
      error: 'endpoint_disabled',
      message: expect.stringMatching(/connector enable --id/),
    });

    // Send test still works while it is disabled.
    expect(await cli(t, ['connector', 'test', '--id', String(connector.id)])).toMatchObject({ delivered: true, status: 200 });
    expect(receiver.requests).toHaveLength(1);

    expect(await cli(t, ['connector', 'enable', '--id', String(connector.id)])).toEqual({
      id: connector.id,
      enabled: true,
      was_disabled_at: disabled.disabled_at,
      was_disabled_reason: disabled.disabled_reason,
    });
    expect(await listedConnector()).toMatchObject({ disabled_at: null, disabled_reason: null, failing_since: null, consecutive_failures: 0 });
    await newEvents(tenant, 1);
    expect((await listed(tenant)).at(-1)).toMatchObject({ branch: 'Delivered', attempts: 1 });

    // What failed while it was off goes out with a recovery, under its webhook-id.
    const recovered = await cli(t, ['deliveries', 'recover', '--connector', String(connector.id), '--since', disabled.disabled_at]);
    expect(recovered).toMatchObject({ recovered: 2, delivery_ids: [fifth.id, sixth.id] });
    await drainAll(tenant);
    expect(
      receiver.requests
        .slice(-2)
        .map((request) => request.headers['webhook-id'])
        .sort(),
    ).toEqual([fifth.message_id, sixth.message_id].sort());
    expect(disablings()).toHaveLength(1);
  }, 90_000);

  it("disables a workflow's Custom URL only with enough failures in a row as well as the time, and `workflow enable` turns it back on", async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/hook`]);
    const listedWorkflow = async () => (await cli(t, ['workflow', 'list', '--workspace', String(tenant.workspaceId)]))[0];
    receiver.fallback = { status: 500 };
    const disabledBefore = await disabledCount('workflow');

    // Failing for over 5 days, but 3 + 3 + 3 failures are fewer than 10: still on.
    await newEvents(tenant, 2);
    await failuresStartedHoursAgo('workflow', workflow.id, 6 * 24);
    await newEvents(tenant, 1);
    expect(await listedWorkflow()).toMatchObject({ disabled_at: null, consecutive_failures: 9 });

    await newEvents(tenant, 1);
    const disabled = await listedWorkflow();
    expect(disabled).toMatchObject({ id: workflow.id, active: true, disabled_at: expect.any(String), disabled_reason: expect.stringMatching(/10 in a row .*HTTP 500/) });
    expect(await disabledCount('workflow')).toBe(disabledBefore + 1);

    receiver.reset();
    await newEvents(tenant, 1);
    expect(receiver.requests).toEqual([]);
    expect((await listed(tenant)).at(-1)).toMatchObject({ branch: 'Failed', error: expect.stringMatching(/^not sent: its endpoint is disabled/) });

    expect(await cli(t, ['workflow', 'enable', '--id', String(workflow.id)])).toMatchObject({ id: workflow.id, enabled: true, was_disabled_at: disabled.disabled_at });
    expect(await listedWorkflow()).toMatchObject({ disabled_at: null, consecutive_failures: 0 });
    await newEvents(tenant, 1);
    expect((await listed(tenant)).at(-1)).toMatchObject({ branch: 'Delivered' });
    expect(receiver.requests).toHaveLength(1);
  }, 90_000);

  it('refuses `enable` for an unknown connector or workflow, and for a workflow whose block sends to a connector', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    const workflow = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--connector', String(connector.id)]);
    expect(await cliRefused(t, ['connector', 'enable', '--id', '987654'])).toMatchObject({ error: 'not_found' });
    expect(await cliRefused(t, ['workflow', 'enable', '--id', '987654'])).toMatchObject({ error: 'not_found' });
    expect(await cliRefused(t, ['workflow', 'enable', '--id', String(workflow.id)])).toMatchObject({
      error: 'not_applicable',
      message: expect.stringMatching(`connector enable\` --id ${connector.id}`),
    });
    // Enabling an endpoint that is on changes nothing.
    expect(await cli(t, ['connector', 'enable', '--id', String(connector.id)])).toEqual({ id: connector.id, enabled: true, was_disabled_at: null, was_disabled_reason: null });
  }, 60_000);
});
