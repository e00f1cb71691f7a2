import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { listDeliveries } from '../../src/deliveries/repository.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { parseMetrics } from '../support/metrics.js';
import { cli, drain, outboundTestBed, postNewPerson } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

// A receiver answering 429: it slows its endpoint down (every delivery to it waits for its
// Retry-After, in seconds or as a date, at most an hour), so the endpoint's other deliveries
// are not sent into it. The answered delivery spends its attempt like any retryable failure:
// exactly WEBHOOK_MAX_ATTEMPTS (3 here) in all.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => {
  ({ t, receiver } = bed);
});

/** A workflow whose Custom URL has the lead's id in its path, so each delivery can be answered its own way. */
async function busyEndpoint(): Promise<Tenant> {
  const tenant = await createTenant(t.ctx.db);
  await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/busy/{{lead.id}}`]);
  return tenant;
}

const deliveryOf = async (tenant: Tenant, leadId: number) => (await listDeliveries(t.ctx.db, tenant.workspaceId, { leadId }))[0]!;
const arrivalsAt = (path: string) => receiver.requests.filter((request) => request.path === path).map((request) => request.receivedAt);
const waits = async () => parseMetrics(await t.ctx.metrics.registry.metrics()).value('lead_intake_delivery_rate_limit_waits_total');

describe('a receiver answering 429', () => {
  it('pauses the endpoint for its Retry-After (seconds or a date): its other deliveries wait and spend nothing', async () => {
    const tenant = await busyEndpoint();
    const waitsBefore = await waits();
    const first = await postNewPerson(t, tenant);
    const firstPath = `/busy/${first}`;
    receiver.routes[firstPath] = { status: 429, headers: { 'retry-after': '3' } };
    await drain(t);
    expect(arrivalsAt(firstPath)).toHaveLength(1);
    // Its next answer is a 429 whose Retry-After is an HTTP date, 3 s after that call is due.
    const until = new Date(Date.now() + 6000).toUTCString();
    receiver.routes[firstPath] = { status: 429, headers: { 'retry-after': until } };

    // During the pause a new delivery to the endpoint waits too, and spends nothing.
    const second = await postNewPerson(t, tenant);
    await drain(t);
    expect(arrivalsAt(`/busy/${second}`)).toEqual([]);
    expect(await deliveryOf(tenant, second)).toMatchObject({ branch: 'pending', attempts: 0 });
    await eventually(
      async () => {
        await drain(t);
        return (await deliveryOf(tenant, second)).branch === 'Delivered';
      },
      15_000,
      50,
    );
    expect(arrivalsAt(`/busy/${second}`)[0]! - arrivalsAt(firstPath)[0]!).toBeGreaterThanOrEqual(2900);

    // Then accepted, on the third and last attempt.
    await eventually(
      async () => {
        await drain(t);
        return arrivalsAt(firstPath).length >= 2;
      },
      15_000,
      50,
    );
    delete receiver.routes[firstPath];
    await eventually(
      async () => {
        await drain(t);
        return (await deliveryOf(tenant, first)).branch === 'Delivered';
      },
      15_000,
      50,
    );

    const calls = arrivalsAt(firstPath);
    expect(calls).toHaveLength(3);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(2900);
    expect(calls[2]!).toBeGreaterThanOrEqual(Date.parse(until) - 1000);
    expect(await deliveryOf(tenant, first)).toMatchObject({ branch: 'Delivered', attempts: 3, rate_limited: 2, status_code: 200 });
    expect(await deliveryOf(tenant, second)).toMatchObject({ branch: 'Delivered', attempts: 1 });
    expect(await waits()).toBe(waitsBefore + 2);
  }, 60_000);

  it("waits at most an hour whatever Retry-After asks, and holds the endpoint's other deliveries as long", async () => {
    const tenant = await busyEndpoint();
    const first = await postNewPerson(t, tenant);
    receiver.routes[`/busy/${first}`] = { status: 429, headers: { 'retry-after': '86400' } };
    await drain(t);
    const second = await postNewPerson(t, tenant);
    await drain(t);

    const waiting = await deliveryOf(tenant, first);
    expect(waiting).toMatchObject({ branch: 'pending', attempts: 1, rate_limited: 1, status_code: 429, error: 'HTTP 429 from the receiver' });
    const hourFromNow = Date.parse(waiting.next_attempt_at!) - Date.now();
    expect(hourFromNow).toBeGreaterThan(3500_000);
    expect(hourFromNow).toBeLessThanOrEqual(3600_000);
    const held = await deliveryOf(tenant, second);
    expect(held).toMatchObject({ branch: 'pending', attempts: 0 });
    expect(Math.abs(Date.parse(held.next_attempt_at!) - Date.parse(waiting.next_attempt_at!))).toBeLessThan(1000);
    expect(arrivalsAt(`/busy/${second}`)).toEqual([]);
  });

  it('ends Failed when it answers 429 forever: exactly WEBHOOK_MAX_ATTEMPTS calls, as for a 5xx', async () => {
    const tenant = await busyEndpoint();
    const lead = await postNewPerson(t, tenant);
    receiver.routes[`/busy/${lead}`] = { status: 429, headers: { 'retry-after': '3600' } };
    // The clock: each wait ends now.
    const waitOver = () =>
      Promise.all([
        sql`UPDATE deliveries SET next_attempt_at = now() WHERE workspace_id = ${tenant.workspaceId} AND branch = 'pending'`.execute(t.ctx.db),
        sql`UPDATE endpoints SET next_slot_at = now(), queued_until = now()`.execute(t.ctx.db),
      ]);
    await drain(t);
    for (let call = 0; call < 10 && (await deliveryOf(tenant, lead)).branch === 'pending'; call += 1) {
      await waitOver();
      await drain(t);
    }
    expect(arrivalsAt(`/busy/${lead}`)).toHaveLength(3);
    expect(await deliveryOf(tenant, lead)).toMatchObject({
      branch: 'Failed',
      attempts: 3,
      rate_limited: 3,
      status_code: 429,
      error: 'HTTP 429 from the receiver (gave up after 3 attempts)',
    });
  }, 60_000);
});
