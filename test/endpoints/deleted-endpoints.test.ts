import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { listDeliveries } from '../../src/deliveries/repository.js';
import { showDelivery } from '../../src/deliveries/service.js';
import type { TestApp } from '../support/app.js';
import { cliError, cliJson } from '../support/cli.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { drain, LOCAL_DELIVERY_ENV, postNewPerson } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { testBed } from '../support/test-bed.js';
import { workspaceOfId } from '../../src/workspaces/owned.js';

// A deleted connector or workflow sends nothing more: not its pending retries, not a run
// fanned out after the delete, not a delivery of it that reaches the worker anyway. The first
// retry here comes 0.5 to 1 s after a failure, long enough to delete in between.

const RETRY_BASE_MS = 1000;
const ENV = { ...LOCAL_DELIVERY_ENV, WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS) };
const bed = testBed({ app: { env: ENV }, tenants: [], receiver: true });
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const cli = <T = Record<string, any>>(args: string[]) => cliJson<T>(t.databaseUrl, args, ENV);
const refused = (args: string[]) => cliError(t.databaseUrl, args, ENV);
// Read without the CLI: each command is a node process, slow under load.
const listed = (tenant: Tenant) => listDeliveries(t.ctx.db, tenant.workspaceId, {});
/** The header names of the request a delivery sends, as `deliveries show` prints them. */
const shownHeaders = async (id: number) => Object.keys((await showDelivery(t.ctx.db, id, await workspaceOfId(t.ctx.db, 'deliveries', id))).request.headers);

/** Waits until every retry scheduled so far is due, then lets the worker do what is due. */
async function pastTheRetries(): Promise<void> {
  await sleep(RETRY_BASE_MS + 200);
  await drain(t);
}

describe('a deleted connector', () => {
  it('sends nothing more: its pending retries (a push and a workflow run) end Failed unsent, without their credential header', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli([
      'connector',
      'create',
      '--workspace',
      String(tenant.workspaceId),
      '--url',
      `${receiver.url}/crm`,
      '--header',
      'X-Api-Key=crm_key_clear_5f1e',
      '--header',
      'X-Team=sales',
    ]);
    await cli(['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--connector', String(connector.id)]);
    receiver.fallback = { status: 503, body: 'down' };
    const lead = await postNewPerson(t, tenant);
    await drain(t);
    expect(await cli(['connector', 'push', '--id', String(connector.id), '--lead', String(lead)])).toMatchObject({ delivered: false, status: 503, branch: 'pending' });
    const pending = await listed(tenant);
    expect(pending.map((delivery) => [delivery.sender, delivery.branch, delivery.attempts])).toEqual([
      ['saved_connector', 'pending', 1],
      ['connector_push', 'pending', 1],
    ]);
    expect(receiver.requests.map((request) => request.headers['x-api-key'])).toEqual(['crm_key_clear_5f1e', 'crm_key_clear_5f1e']);
    receiver.reset();

    const deleted = await cli(['connector', 'delete', '--id', String(connector.id)]);
    await pastTheRetries();
    expect(receiver.requests).toEqual([]);
    expect(deleted).toEqual({ id: connector.id, deleted: true, cancelled_deliveries: 2 });
    expect(await listed(tenant)).toEqual(
      pending.map((delivery) =>
        expect.objectContaining({
          id: delivery.id,
          branch: 'Failed',
          attempts: 1,
          status_code: 503,
          next_attempt_at: null,
          error: `cancelled: connector ${connector.id} was deleted, so nothing more is sent`,
        }),
      ),
    );
    for (const delivery of pending) expect(await shownHeaders(delivery.id)).toEqual(['User-Agent', 'Content-Type', 'X-Team', 'webhook-id']);

    // A delivery of it that still reaches the worker (here a replay; as well one a fan-out
    // composed from what it read just before the delete) ends Failed without a call.
    expect(await cli(['deliveries', 'replay', '--id', String(pending[1]!.id)])).toMatchObject({ branch: 'pending' });
    await drain(t);
    expect(receiver.requests).toEqual([]);
    expect((await listed(tenant))[1]).toMatchObject({ branch: 'Failed', status_code: null, error: 'not sent: its connector or workflow was deleted (or no longer exists)' });

    expect(await refused(['connector', 'delete', '--id', String(connector.id)])).toMatchObject({ error: 'not_found' });
  }, 90_000);
});

describe('a deleted workflow', () => {
  it("sends nothing more: its Custom URL's pending retry ends Failed unsent, and nothing new is fanned out to it", async () => {
    const tenant = await createTenant(t.ctx.db);
    const workspace = String(tenant.workspaceId);
    const workflow = await cli([
      'workflow',
      'create',
      '--workspace',
      workspace,
      '--trigger',
      'lead_created',
      '--url',
      `${receiver.url}/hook`,
      '--header',
      'Authorization=Bearer wf_clear_block_77aa',
    ]);
    const kept = await cli(['workflow', 'create', '--workspace', workspace, '--trigger', 'lead_created', '--url', `${receiver.url}/kept`]);
    receiver.routes['/hook'] = { status: 503, body: 'down' };
    await postNewPerson(t, tenant);
    await drain(t);
    const [pending] = (await listed(tenant)).filter((delivery) => delivery.workflow_id === workflow.id);
    expect(pending).toMatchObject({ branch: 'pending', attempts: 1 });
    receiver.reset();

    const deleted = await cli(['workflow', 'delete', '--id', String(workflow.id)]);
    await postNewPerson(t, tenant);
    await pastTheRetries();
    expect(receiver.requests.map((request) => request.path)).toEqual(['/kept']);
    expect(deleted).toEqual({ id: workflow.id, deleted: true, cancelled_deliveries: 1 });
    expect((await listed(tenant)).filter((delivery) => delivery.workflow_id === workflow.id)).toEqual([
      expect.objectContaining({
        id: pending!.id,
        branch: 'Failed',
        attempts: 1,
        error: `cancelled: workflow ${workflow.id} was deleted, so nothing more is sent`,
      }),
    ]);
    expect(await shownHeaders(pending!.id)).not.toContain('Authorization');
    expect(await cli(['deliveries', 'replay', '--id', String(pending!.id)])).toMatchObject({ branch: 'pending' });
    await drain(t);
    expect(receiver.requests.map((request) => request.path)).toEqual(['/kept']);

    expect((await cli<Array<{ id: number }>>(['workflow', 'list', '--workspace', workspace])).map((listedWorkflow) => listedWorkflow.id)).toEqual([kept.id]);
    for (const args of [
      ['workflow', 'delete'],
      ['workflow', 'activate'],
      ['workflow', 'enable'],
      ['workflow', 'update', '--max-per-second', '1'],
    ]) {
      expect(await refused([...args, '--id', String(workflow.id)])).toMatchObject({ error: 'not_found' });
    }
    expect(await refused(['deliveries', 'recover', '--workflow', String(workflow.id), '--since', '2000-01-01T00:00:00Z'])).toMatchObject({ error: 'not_found' });
  }, 90_000);
});
