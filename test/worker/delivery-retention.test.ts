import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import { testBed } from '../support/test-bed.js';
import { jsonParameter } from '../../src/db/sql.js';
import { WorkerContext } from '../../src/worker/context.js';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { housekeeping } from '../../src/worker/housekeeping.js';

// DELIVERY_RETENTION_DAYS: the worker's housekeeping deletes finished deliveries, and their
// attempts, older than that; younger ones and pending ones stay.

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => {
  ({ t } = bed);
});

/** `count` deliveries of the workspace on `branch`, created `ageDays` ago. */
const insertDeliveries = (workspaceId: number, count: number, ageDays: number, branch: string) =>
  sql<{ id: number }>`
  INSERT INTO deliveries (workspace_id, event, sender, trigger, message_id, url, method, max_attempts, branch, attempts, created_at)
  SELECT ${workspaceId}, 'lead', 'connector_push', 'push', 'msg_' || md5(random()::text || n), 'https://crm.example', 'POST', 3, ${branch}, 1,
    now() - make_interval(days => ${ageDays})
  FROM generate_series(1, ${count}) AS n RETURNING id`.execute(t.ctx.db);

describe('delivery retention', () => {
  it('purges finished deliveries past the retention, with their attempts, across several batches', async () => {
    const tenant = await createTenant(t.ctx.db);
    const insert = (count: number, ageDays: number, branch: string) => insertDeliveries(tenant.workspaceId, count, ageDays, branch);
    const old = await insert(1100, 31, 'Delivered');
    const oldFailed = await insert(3, 45, 'Failed');
    const oldPending = await insert(2, 40, 'pending');
    const young = await insert(4, 29, 'Delivered');
    await sql`INSERT INTO delivery_attempts (workspace_id, delivery_id, attempt, duration_ms) SELECT workspace_id, id, 1, 5 FROM deliveries`.execute(t.ctx.db);

    await housekeeping(t.ctx.db, 30, sessionLimitsOf(t.ctx.config), 365);

    const { rows } = await sql<{ id: number }>`SELECT id FROM deliveries WHERE workspace_id = ${tenant.workspaceId} ORDER BY id`.execute(t.ctx.db);
    expect(rows.map((row) => row.id)).toEqual([...oldPending.rows, ...young.rows].map((row) => row.id));
    const { rows: attempts } = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY(${[...old.rows, ...oldFailed.rows].map((row) => row.id)})`.execute(t.ctx.db);
    expect(attempts[0]!.n).toBe(0);
  });
});

describe('event retention', () => {
  it('purges outbox events processed more than 7 days ago, and keeps younger and unprocessed ones', async () => {
    const tenant = await createTenant(t.ctx.db);
    /** An outbox event of the workspace processed `processedDaysAgo` days ago (null: not yet). */
    const event = async (processedDaysAgo: number | null) =>
      (
        await sql<{ id: number }>`
      INSERT INTO outbox (workspace_id, topic, payload, created_at, processed_at)
      VALUES (${tenant.workspaceId}, 'lead.created', '{"lead_id": 1}', now() - interval '30 days',
        CASE WHEN ${processedDaysAgo}::int IS NULL THEN NULL ELSE now() - make_interval(days => ${processedDaysAgo}::int, mins => 1) END)
      RETURNING id`.execute(t.ctx.db)
      ).rows[0]!.id;
    const purged = [await event(8), await event(7)];
    const kept = [await event(6), await event(null)];

    await housekeeping(t.ctx.db, 30, sessionLimitsOf(t.ctx.config), 365);

    const { rows } = await sql<{ id: number }>`SELECT id FROM outbox WHERE id = ANY(${[...purged, ...kept]}) ORDER BY id`.execute(t.ctx.db);
    expect(rows.map((row) => row.id)).toEqual(kept);
  });
});

describe('the housekeeping schedule', () => {
  it('is its own: a starting worker purges even while fanning out fails on every poll', async () => {
    const tenant = await createTenant(t.ctx.db);
    const old = await insertDeliveries(tenant.workspaceId, 2, 31, 'Delivered');
    // A lead event whose lead id is no number: every fan-out step fails on it.
    const poisoned = await t.ctx.db
      .insertInto('outbox')
      .values({ workspace_id: tenant.workspaceId, topic: 'lead.created', payload: jsonParameter({ lead_id: 'none' }) })
      .returning('id')
      .executeTakeFirstOrThrow();
    await expect(new WorkerContext(t.ctx).processAll()).rejects.toThrow(/invalid input syntax/);
    const worker = new WorkerContext({ ...t.ctx, config: { ...t.ctx.config, OUTBOX_POLL_MS: 50 } });
    worker.start();
    try {
      await eventually(
        async () => {
          const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY(${old.rows.map((row) => row.id)})`.execute(t.ctx.db);
          return rows[0]!.n === 0;
        },
        20_000,
        50,
      );
      const event = await t.ctx.db.selectFrom('outbox').select('processed_at').where('id', '=', poisoned.id).executeTakeFirstOrThrow();
      expect(event.processed_at).toBeNull();
    } finally {
      await worker.close();
      await t.ctx.db.deleteFrom('outbox').where('id', '=', poisoned.id).execute();
    }
  });
});
