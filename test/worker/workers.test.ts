import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { eventually } from '../support/eventually.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { cli } from '../support/outbound.js';
import type { Receiver } from '../support/receiver.js';

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');

const bed = testBed({ tenants: [], receiver: true });
let t: TestApp;
let receiver: Receiver;
const workers: ChildProcess[] = [];
beforeAll(() => {
  ({ t, receiver } = bed);
});
afterEach(async () => {
  for (const worker of workers.splice(0)) {
    if (worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGKILL');
      await once(worker, 'exit');
    }
  }
});

/** `npm run worker` as its own process (compiled by the test run's global setup). */
function startWorkerProcess(env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'worker-main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: t.databaseUrl,
      LOG_LEVEL: 'error',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      OUTBOX_POLL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_RETRY_BASE_MS: '50',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  workers.push(child);
  return child;
}

/** A workspace with `count` leads, a lead_created workflow to the receiver, and one queued event per lead. */
async function queueEvents(count: number): Promise<Tenant> {
  const tenant = await createTenant(t.ctx.db);
  await cli(t, ['workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `${receiver.url}/hook`]);
  await sql`
    WITH created AS (
      INSERT INTO leads (workspace_id, name, source, emails)
      SELECT ${tenant.workspaceId}, 'Lead ' || n, 'api', ARRAY['lead' || n || '@example.com']
      FROM generate_series(1, ${count}) AS n
      RETURNING id
    )
    INSERT INTO outbox (workspace_id, topic, payload)
    SELECT ${tenant.workspaceId}, 'lead.created', jsonb_build_object('lead_id', id) FROM created ORDER BY id
  `.execute(t.ctx.db);
  return tenant;
}

const branches = async (workspaceId: number) =>
  Object.fromEntries(
    (
      await t.ctx.db
        .selectFrom('deliveries')
        .where('workspace_id', '=', workspaceId)
        .select(['branch', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('branch')
        .execute()
    ).map((row) => [row.branch, Number(row.n)]),
  );
const distinctMessages = () => new Set(receiver.requests.map((request) => request.headers['webhook-id'])).size;

/**
 * A 5 s timeout (and so a lease of 2 x 5 s + 5 s, deliver.ts) for tests about claims that hold
 * and deliveries that finish: on a loaded CI machine the receiver in this process can answer
 * later than the default 1 s, and a delivery timed out is retried (at least once, by design),
 * which those tests would read as a claim lost or a delivery cut off. Once, with the 1 s
 * timeout's 7 s lease, another worker sent 34 of 1,000 again; once 18 of 64 sent before a
 * SIGTERM were left to be retried.
 */
const LONG_TIMEOUT = { WEBHOOK_TIMEOUT_MS: '5000' };

/** One worker in the middle of `events` queued events, each answered after `delayMs`, once the receiver has seen `seen` of them. */
async function workerMidRun(events: number, delayMs: number, seen: number, env: Record<string, string> = {}) {
  const tenant = await queueEvents(events);
  receiver.fallback = { status: 200, body: '{}', delayMs };
  const worker = startWorkerProcess(env);
  await eventually(async () => receiver.requests.length >= seen, 20000, 20);
  return { tenant, worker };
}

describe('the dispatcher under several workers', () => {
  it('two workers drain 1,000 events with no duplicate and no loss, and stop cleanly on SIGTERM', async () => {
    const tenant = await queueEvents(1000);
    const pair = [startWorkerProcess(LONG_TIMEOUT), startWorkerProcess(LONG_TIMEOUT)];
    await eventually(async () => (await branches(tenant.workspaceId)).Delivered === 1000, 40000, 100);

    expect(receiver.requests).toHaveLength(1000);
    expect(distinctMessages()).toBe(1000);
    const leadIds = receiver.requests.map((request) => (JSON.parse(request.body) as { lead_id: number }).lead_id);
    expect(new Set(leadIds).size).toBe(1000);
    expect(await branches(tenant.workspaceId)).toEqual({ Delivered: 1000 });
    // Each delivery was attempted exactly once.
    const attempts = await t.ctx.db
      .selectFrom('delivery_attempts')
      .innerJoin('deliveries', (join) => join.onRef('deliveries.workspace_id', '=', 'delivery_attempts.workspace_id').onRef('deliveries.id', '=', 'delivery_attempts.delivery_id'))
      .where('deliveries.workspace_id', '=', tenant.workspaceId)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBe(1000);

    for (const worker of pair) worker.kill('SIGTERM');
    const exits = await Promise.all(pair.map((worker) => once(worker, 'exit')));
    expect(exits.map(([code]) => code)).toEqual([0, 0]);
  }, 60000);

  it('a worker killed mid-run loses nothing: its claims are retried after the lease', async () => {
    const { tenant, worker: doomed } = await workerMidRun(200, 150, 20);
    doomed.kill('SIGKILL');
    await once(doomed, 'exit');
    const claimedByTheDead = await t.ctx.db
      .selectFrom('deliveries')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('branch', '=', 'pending')
      .where('locked_by', 'is not', null)
      .select('id')
      .execute();
    expect(claimedByTheDead.length).toBeGreaterThan(0);

    receiver.fallback = { status: 200, body: '{}' };
    startWorkerProcess();
    await eventually(async () => (await branches(tenant.workspaceId)).Delivered === 200, 40000, 100);
    expect(distinctMessages()).toBe(200);
    expect(await branches(tenant.workspaceId)).toEqual({ Delivered: 200 });
  }, 60000);

  it('SIGTERM finishes in-flight deliveries and leaves no claim behind', async () => {
    // Few enough that the window has room: no step is waiting for a delivery when SIGTERM
    // comes (the poll's sleep ends at once), so only the stop's finish can let them end.
    const { tenant, worker } = await workerMidRun(12, 1000, 12, LONG_TIMEOUT);
    worker.kill('SIGTERM');
    const [code] = await once(worker, 'exit');
    expect(code).toBe(0);

    const held = await t.ctx.db.selectFrom('deliveries').where('workspace_id', '=', tenant.workspaceId).where('locked_by', 'is not', null).select('id').execute();
    expect(held).toHaveLength(0);
    // Every request the receiver saw was recorded as delivered: nothing was cut off.
    expect((await branches(tenant.workspaceId)).Delivered).toBe(distinctMessages());
  }, 60000);
});
