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
// Retry-After, in seconds or as a date, at most an hour) instead of spending the delivery's
// attempts (3 here), up to 20 such answers per series; from the 21st a 429 counts like a 5xx.

const bed = outboundTestBed();
let t: TestApp;
let receiver: Receiver;
beforeAll(() => { ({ t, receiver } = bed); });

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
  it('pauses the endpoint for its Retry-After (seconds or a date) and spends no attempts', async () => {
    const tenant = await busyEndpoint();
    const waitsBefore = await waits();
    const first = await postNewPerson(t, tenant);
    const firstPath = `/busy/${first}`;
    receiver.routes[firstPath] = { status: 429, headers: { 'retry-after': '3' } };
    await drain(t);
    expect(arrivalsAt(firstPath)).toHaveLength(1);
    receiver.routes[firstPath] = { status: 429, headers: { 'retry-after': '1' } };

    // During the pause a new delivery to the endpoint waits too.
    const second = await postNewPerson(t, tenant);
    await drain(t);
    expect(arrivalsAt(`/busy/${second}`)).toEqual([]);
    expect(await deliveryOf(tenant, second)).toMatchObject({ branch: 'pending', attempts: 0 });
    await eventually(async () => { await drain(t); return (await deliveryOf(tenant, second)).branch === 'Delivered'; }, 15_000, 50);
    expect(arrivalsAt(`/busy/${second}`)[0]! - arrivalsAt(firstPath)[0]!).toBeGreaterThanOrEqual(2900);

    // Twice more 429 (once with an HTTP date), then accepted: 4 calls, of 3 attempts at most.
    await eventually(async () => { await drain(t); return arrivalsAt(firstPath).length >= 2; }, 15_000, 50);
    const until = new Date(Date.now() + 3000).toUTCString();
    receiver.routes[firstPath] = { status: 429, headers: { 'retry-after': until } };
    await eventually(async () => { await drain(t); return arrivalsAt(firstPath).length >= 3; }, 15_000, 50);
    delete receiver.routes[firstPath];
    await eventually(async () => { await drain(t); return (await deliveryOf(tenant, first)).branch === 'Delivered'; }, 15_000, 50);

    const calls = arrivalsAt(firstPath);
    expect(calls).toHaveLength(4);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(2900);
    expect(calls[2]! - calls[1]!).toBeGreaterThanOrEqual(900);
    expect(calls[3]!).toBeGreaterThanOrEqual(Date.parse(until) - 100);
    expect(await deliveryOf(tenant, first)).toMatchObject({ branch: 'Delivered', attempts: 4, rate_limited: 3, status_code: 200 });
    expect(await waits()).toBe(waitsBefore + 3);
  }, 60_000);

  it('waits at most an hour whatever Retry-After asks, and holds the endpoint\'s other deliveries as long', async () => {
    const tenant = await busyEndpoint();
    const first = await postNewPerson(t, tenant);
    receiver.routes[`/busy/${first}`] = { status: 429, headers: { 'retry-after': '86400' } };
    await drain(t);
    const second = await postNewPerson(t, tenant);
    await drain(t);

    const waiting = await deliveryOf(tenant, first);
    expect(waiting).toMatchObject({ branch: 'pending', attempts: 1, rate_limited: 1, status_code: 429, error: expect.stringMatching(/wait 3600 s; not counted as an attempt/) });
    const hourFromNow = Date.parse(waiting.next_attempt_at!) - Date.now();
    expect(hourFromNow).toBeGreaterThan(3500_000);
    expect(hourFromNow).toBeLessThanOrEqual(3600_000);
    const held = await deliveryOf(tenant, second);
    expect(held).toMatchObject({ branch: 'pending', attempts: 0 });
    expect(Math.abs(Date.parse(held.next_attempt_at!) - Date.parse(waiting.next_attempt_at!))).toBeLessThan(1000);
    expect(arrivalsAt(`/busy/${second}`)).toEqual([]);
  });

  it('ends Failed when it answers 429 forever: 20 waits, then the 3 attempts', async () => {
    const tenant = await busyEndpoint();
    const lead = await postNewPerson(t, tenant);
    receiver.routes[`/busy/${lead}`] = { status: 429, headers: { 'retry-after': '3600' } };
    // The clock: each wait ends now.
    const waitOver = () => Promise.all([
      sql`UPDATE deliveries SET next_attempt_at = now() WHERE workspace_id = ${tenant.workspaceId} AND branch = 'pending'`.execute(t.ctx.db),
      sql`UPDATE endpoints SET next_slot_at = now(), queued_until = now()`.execute(t.ctx.db),
    ]);
    await drain(t);
    for (let call = 0; call < 30 && (await deliveryOf(tenant, lead)).branch === 'pending'; call += 1) {
      await waitOver();
      await drain(t);
    }
    expect(arrivalsAt(`/busy/${lead}`)).toHaveLength(23);
    expect(await deliveryOf(tenant, lead)).toMatchObject({
      branch: 'Failed', attempts: 23, rate_limited: 20, status_code: 429,
      error: 'HTTP 429 from the receiver (gave up after 3 attempts and 20 answers 429 that did not count)',
    });
  }, 60_000);
});
