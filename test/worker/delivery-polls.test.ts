import { beforeAll, describe, expect, it } from '@jest/globals';
import { WorkerContext } from '../../src/worker/context.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant } from '../support/fixtures.js';
import { cli, deliveries, outboundTestBed } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';
import { uniqueEmail } from '../support/requests.js';
import { statementsSentBy } from '../support/statements.js';

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

/** The delivery job's question "which workspaces have due deliveries?" (src/deliveries/claim-repository.ts). */
const isTurnQuery = (text: string) => /SELECT workspace_id FROM deliveries\s+WHERE branch = 'pending'/.test(text);

describe("the delivery job's polls", () => {
  it('with deliveries in flight and none due, asks again when the fan-out writes more or its interval ends, not each time an exchange ends', async () => {
    const tenant = await createTenant(t.ctx.db);
    await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/slow`]);
    const count = 8;
    // The exchanges end one after another, 150 ms apart.
    receiver.queue(...Array.from({ length: count }, (_, index) => ({ status: 200, body: '{}', delayMs: 150 * (index + 1) })));
    for (let index = 0; index < count; index++) {
      const created = await t.http
        .post('/api/v1/leads')
        .set(tenant.auth)
        .send({ name: `Slow ${index}`, email: uniqueEmail('slow'), enrich: false });
      expect(created.status).toBe(201);
    }

    // A live worker whose interval outlasts the test: every poll it makes comes from its own work.
    const worker = new WorkerContext({ config: { ...t.ctx.config, OUTBOX_POLL_MS: 60_000 }, db: t.ctx.db, logger: t.ctx.logger, metrics: t.ctx.metrics });
    const { sent } = await statementsSentBy(t.ctx.pool, async () => {
      worker.start();
      try {
        await eventually(async () => (await deliveries(t, tenant.workspaceId)).filter((delivery) => delivery.branch === 'Delivered').length === count, 15_000, 50);
      } finally {
        await worker.close();
      }
    });

    expect(receiver.requests.filter((request) => request.path === '/slow')).toHaveLength(count);
    // Before the fan-out, once it woke the job (claiming all eight), and once to find nothing more:
    // one per exchange that ended would be eight more.
    expect(sent.filter((statement) => isTurnQuery(statement.text)).length).toBeLessThanOrEqual(3);
  }, 30_000);
});
