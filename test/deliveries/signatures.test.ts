import { beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import type { TestApp } from '../support/app.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli, cliRefused, drain, drainUntilBranch, outboundTestBed, postNewPerson } from '../support/outbound.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';

// Every request the service sends is signed: workflow deliveries (Custom URL with the
// workflow's secret, Saved connector with the connector's), each retry anew, every method.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

const newLead = (tenant: Tenant) => postNewPerson(t, tenant);

/** The verified payload of a signed request with a body; throws when the signature does not verify with `secret`. */
const verified = (secret: string, request: ReceivedRequest) => new Webhook(secret).verify(request.body, request.headers as Record<string, string>);

describe('signatures', () => {
  it('signs a Custom URL workflow delivery and each of its retries with the workflow secret', async () => {
    const tenant = await createTenant(t.ctx.db);
    const workflow = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/hook`]);
    expect(workflow.signing_secret).toMatch(/^whsec_/);
    receiver.queue({ status: 503 }, { status: 408 });
    const leadId = await newLead(tenant);
    await drainUntilBranch(t, tenant.workspaceId, 'Delivered');

    expect(receiver.requests).toHaveLength(3);
    for (const request of receiver.requests) expect(verified(workflow.signing_secret as string, request)).toMatchObject({ event: 'workflow', lead_id: leadId });
    expect(new Set(receiver.requests.map((request) => request.headers['webhook-id'])).size).toBe(1);
    const other = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'tag_added', '--tag', 'Unused', '--url', `${receiver.url}/other`]);
    expect(() => verified(other.signing_secret as string, receiver.requests[0]!)).toThrow();
  });

  it('signs a Saved connector workflow delivery with the connector secret', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    const workflow = await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--connector', String(connector.id)]);
    const leadId = await newLead(tenant);
    await drain(t);

    expect(receiver.requests.map((request) => request.path)).toEqual(['/crm']);
    expect(verified(connector.signing_secret as string, receiver.requests[0]!)).toMatchObject({ lead_id: leadId });
    expect(() => verified(workflow.signing_secret as string, receiver.requests[0]!)).toThrow();
  });

  it('sends PATCH with a signed JSON body', async () => {
    const tenant = await createTenant(t.ctx.db);
    const leadId = await newLead(tenant);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/patched`, '--method', 'PATCH']);
    expect(await cli(t, ['connector', 'push', '--id', String(connector.id), '--lead', String(leadId)])).toMatchObject({ delivered: true, status: 200 });
    const [request] = receiver.requests;
    expect({ method: request!.method, path: request!.path, contentType: request!.headers['content-type'] }).toEqual({
      method: 'PATCH',
      path: '/patched',
      contentType: 'application/json',
    });
    expect(verified(connector.signing_secret as string, request!)).toMatchObject({ event: 'lead', lead_id: leadId });
  });
});

describe('connector update', () => {
  it('switches auto-push on and off, and refuses an unknown connector', async () => {
    const tenant = await createTenant(t.ctx.db);
    const connector = await cli(t, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    expect(connector.auto_push).toBe(false);

    const on = await cli(t, ['connector', 'update', '--id', String(connector.id), '--auto-push', 'on']);
    expect(on).toMatchObject({ id: connector.id, auto_push: true });
    expect(on).not.toHaveProperty('signing_secret');
    const pushed = await newLead(tenant);
    await drain(t);
    expect(receiver.requests.map((request) => [request.path, JSON.parse(request.body).lead_id])).toEqual([['/crm', pushed]]);

    expect(await cli(t, ['connector', 'update', '--id', String(connector.id), '--auto-push', 'off'])).toMatchObject({ id: connector.id, auto_push: false });
    await newLead(tenant);
    await drain(t);
    expect(receiver.requests).toHaveLength(1);

    expect(await cliRefused(t, ['connector', 'update', '--id', '999999', '--auto-push', 'on'])).toEqual({ error: 'not_found', message: 'Connector 999999 does not exist.' });
  });
});
