import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { cli, drain, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { uniqueEmail } from '../support/requests.js';

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

describe('workers serve workspaces in turn', () => {
  it("send a quiet workspace's delivery in the first claims, even behind a busy workspace's backlog made before it", async () => {
    const busy = await createTenant(t.ctx.db);
    const quiet = await createTenant(t.ctx.db);
    await cli(t, ['workflow', 'create', '--workspace', String(busy.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/busy`]);
    await cli(t, ['workflow', 'create', '--workspace', String(quiet.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/quiet`]);
    for (let batch = 0; batch < 3; batch++) {
      const leads = Array.from({ length: 100 }, (_, index) => ({ name: `Busy ${batch}-${index}`, email: uniqueEmail('busy') }));
      expect((await t.http.post('/api/v1/leads/batch').set(busy.auth).send({ leads })).status).toBe(200);
    }
    expect(
      (
        await t.http
          .post('/api/v1/leads')
          .set(quiet.auth)
          .send({ name: 'Quiet', email: uniqueEmail('quiet'), enrich: false })
      ).status,
    ).toBe(201);

    await drain(t);

    const paths = receiver.requests.map((request) => request.path);
    expect(paths.filter((path) => path === '/busy')).toHaveLength(300);
    // A claim takes at most 64 deliveries, shared by the workspaces with due work: the quiet
    // workspace's one is among the first claimed, not after the 300 made before it.
    expect(paths.indexOf('/quiet')).toBeGreaterThanOrEqual(0);
    expect(paths.indexOf('/quiet')).toBeLessThan(64);
  }, 60_000);
});
