import { beforeAll, describe, expect, it } from '@jest/globals';
import { claimDueDeliveries } from '../../src/deliveries/claim-repository.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { cli, LOCAL_DELIVERY_ENV } from '../support/outbound.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { testBed } from '../support/test-bed.js';
import { signInByLink, type ConsoleSession } from './support.js';

// Send test (and Push to CRM, the same sendNow) answers with its own attempt even while a
// worker claims due deliveries as fast as it can: the delivery is never visible unclaimed.

const bed = testBed({ app: { env: LOCAL_DELIVERY_ENV } });
let app: TestApp;
let tenant: Tenant;
let admin: ConsoleSession;
let receiver: Receiver;

beforeAll(async () => {
  ({
    t: app,
    tenants: [tenant],
  } = bed);
  receiver = await startReceiver({ databaseUrl: app.databaseUrl });
  bed.closeFirst(() => receiver.close());
  admin = await signInByLink(app, tenant.userId);
});

describe('Send test', () => {
  it('makes the attempt it answers with, while a worker claims due deliveries without pause', async () => {
    const connector = await cli<{ id: number }>(app, ['connector', 'create', '--workspace', String(tenant.workspaceId), '--url', `${receiver.url}/crm`]);
    let polling = true;
    let claimedByWorker = 0;
    const worker = (async () => {
      while (polling) claimedByWorker += (await claimDueDeliveries(app.ctx.db, tenant.workspaceId, 'rival-worker', 64, 60_000)).rows.length;
    })();
    const answers = [];
    try {
      for (let sent = 0; sent < 20; sent += 1) answers.push(await admin.post(`/console/connectors/${connector.id}/test`));
    } finally {
      polling = false;
      await worker;
    }
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    expect(answers.filter((answer) => !/<dt>Delivered<\/dt><dd>yes<\/dd>/.test(answer.text)).map((answer) => /<dt>Error<\/dt><dd>([^<]*)/.exec(answer.text)?.[1])).toEqual([]);
    expect(claimedByWorker).toBe(0);
    expect(receiver.requests.filter((request) => request.path === '/crm')).toHaveLength(20);
  });
});
