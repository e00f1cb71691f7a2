import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import { deleteConnector } from '../../src/connectors/service.js';
import { listDeliveries, type DeliveryListItem } from '../../src/deliveries/repository.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, outboundTestBed, plainConnector, postNewPerson, workflowTo } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { OPERATOR } from '../../src/audit/service.js';

// Recovery after an outage, as an operator runs it: the receiver is down, deliveries end
// Failed (3 attempts, 10 ms retry base), the receiver comes back, `deliveries recover` sends
// the endpoint's failed deliveries of the window again under the same webhook-id, once.

// Every test runs the CLI several times, each a process of its own: seconds apiece on a loaded machine.
jest.setTimeout(90_000);

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const listed = (tenant: Tenant) => listDeliveries(t.ctx.db, tenant.workspaceId, {});

/** Drains, retries included as they fall due, until none of the workspace's deliveries is pending. */
const drainAll = (tenant: Tenant) =>
  eventually(
    async () => {
      await drain(t);
      return (await listed(tenant)).every((delivery) => delivery.branch !== 'pending');
    },
    10000,
    50,
  );

/** Just after the last of these deliveries finished (finished_at has microseconds; a JS Date keeps milliseconds). */
const justAfter = (deliveries: DeliveryListItem[]) => new Date(Math.max(...deliveries.map((delivery) => Date.parse(delivery.finished_at!))) + 1).toISOString();

const idsOf = (requests: Receiver['requests'], path: string) => requests.filter((request) => request.path === path).map((request) => String(request.headers['webhook-id']));

describe('deliveries recover', () => {
  it('sends every Failed delivery of the workflow in the window again under its webhook-id, once; a second run sends nothing', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await workflowTo(t, tenant, `${receiver.url}/recovered`);
    const other = await workflowTo(t, tenant, `${receiver.url}/still-down`);
    receiver.fallback = { status: 500, body: 'outage' };

    await postNewPerson(t, tenant); // before the window
    await drainAll(tenant);
    const since = justAfter(await listed(tenant));
    await postNewPerson(t, tenant);
    await postNewPerson(t, tenant);
    await drainAll(tenant);
    const until = justAfter(await listed(tenant));
    await postNewPerson(t, tenant); // after the window
    await drainAll(tenant);

    const before = await listed(tenant);
    expect(before.map((delivery) => delivery.branch)).toEqual(Array(8).fill('Failed'));
    const ofWorkflow = before.filter((delivery) => delivery.workflow_id === workflow.id);
    const ofOther = before.filter((delivery) => delivery.workflow_id === other.id);
    const inWindow = ofWorkflow.slice(1, 3);

    // The receiver is back, except the other workflow's.
    receiver.reset();
    receiver.routes['/still-down'] = { status: 500, body: 'still down' };
    const recover = (id: number, ...window: string[]) => cli(t, ['deliveries', 'recover', '--workflow', String(id), '--since', since, ...window]);
    expect(await recover(workflow.id, '--until', until)).toEqual({ recovered: 2, skipped: 0, delivery_ids: inWindow.map((delivery) => delivery.id) });
    await drainAll(tenant);
    expect(idsOf(receiver.requests, '/recovered').sort()).toEqual(inWindow.map((delivery) => delivery.message_id).sort());
    expect(receiver.requests).toHaveLength(2);

    expect(await recover(workflow.id, '--until', until)).toEqual({ recovered: 0, skipped: 0, delivery_ids: [] });
    await drainAll(tenant);
    expect(receiver.requests).toHaveLength(2);

    const after = new Map((await listed(tenant)).map((delivery) => [delivery.id, delivery]));
    for (const delivery of inWindow) expect(after.get(delivery.id)).toMatchObject({ branch: 'Delivered', series: 2, attempts: 1, status_code: 200 });
    for (const delivery of [ofWorkflow[0]!, ofWorkflow[3]!, ...ofOther]) expect(after.get(delivery.id)).toMatchObject({ branch: 'Failed', series: 1, attempts: 3 });

    // Recovered while its receiver is still down: Failed again, and a later recovery skips it.
    receiver.reset();
    receiver.routes['/still-down'] = { status: 500, body: 'still down' };
    const otherInWindow = ofOther.slice(1);
    expect(await recover(other.id)).toEqual({ recovered: 3, skipped: 0, delivery_ids: otherInWindow.map((delivery) => delivery.id) });
    await drainAll(tenant);
    expect(await recover(other.id)).toEqual({ recovered: 0, skipped: 3, delivery_ids: [] });
    await drainAll(tenant);
    expect(idsOf(receiver.requests, '/still-down').sort()).toEqual(otherInWindow.flatMap((delivery) => Array(3).fill(delivery.message_id)).sort());
    expect(receiver.requests).toHaveLength(9);
  });

  it('two recoveries at once send each delivery again once between them', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await workflowTo(t, tenant, `${receiver.url}/concurrent`);
    receiver.fallback = { status: 500 };
    await postNewPerson(t, tenant);
    await postNewPerson(t, tenant);
    await drainAll(tenant);
    const failed = await listed(tenant);
    receiver.reset();

    const args = ['deliveries', 'recover', '--workflow', String(workflow.id), '--since', '2000-01-01T00:00:00Z'];
    const runs = await Promise.all([cli(t, args), cli(t, args)]);
    expect(runs.map((run) => run.recovered).sort()).toEqual([0, 2]);
    await drainAll(tenant);
    expect(idsOf(receiver.requests, '/concurrent').sort()).toEqual(failed.map((delivery) => delivery.message_id).sort());
  });

  it('refuses both or neither endpoint, an unknown or deleted one, a bad time, --until before --since; nothing is sent', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await workflowTo(t, tenant, `${receiver.url}/refused`);
    receiver.fallback = { status: 500 };
    await postNewPerson(t, tenant);
    await drainAll(tenant);
    const connector = await plainConnector(t.ctx.db, tenant.workspaceId, `${receiver.url}/crm`);
    await deleteConnector(t.ctx.db, OPERATOR, connector.id);
    receiver.reset();

    const since = '2000-01-01T00:00:00Z';
    const refused = (...args: string[]) => cliRefused(t, ['deliveries', 'recover', ...args]);
    expect(await refused('--since', since)).toMatchObject({ error: 'invalid_argument', message: expect.stringMatching(/exactly one of --connector, --workflow/) });
    expect(await refused('--connector', String(connector.id), '--workflow', String(workflow.id), '--since', since)).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/not --connector and --workflow/),
    });
    expect(await refused('--workflow', '987654321', '--since', since)).toMatchObject({ error: 'not_found' });
    expect(await refused('--connector', String(connector.id), '--since', since)).toMatchObject({ error: 'not_found' });
    expect(await refused('--workflow', String(workflow.id), '--since', 'yesterday')).toMatchObject({ error: 'invalid_argument', message: expect.stringMatching(/--since/) });
    expect(await refused('--workflow', String(workflow.id), '--since', since, '--until', '1999-12-31T23:59:59Z')).toMatchObject({
      error: 'invalid_argument',
      message: expect.stringMatching(/--until .* before --since/),
    });

    await drain(t);
    expect(receiver.requests).toEqual([]);
    expect(await listed(tenant)).toEqual([expect.objectContaining({ branch: 'Failed', series: 1 })]);
  });
});
