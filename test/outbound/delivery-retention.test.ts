import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { housekeeping } from '../../src/worker/housekeeping.js';

// DELIVERY_RETENTION_DAYS: the worker's housekeeping deletes finished deliveries, and their
// attempts, older than that; younger ones and pending ones stay.

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => { ({ t } = bed); });

describe('delivery retention', () => {
  it('purges finished deliveries past the retention, with their attempts, across several batches', async () => {
    const tenant = await createTenant(t.ctx.db);
    const insert = (count: number, ageDays: number, branch: string) => sql<{ id: number }>`
      INSERT INTO deliveries (workspace_id, event, sender, trigger, message_id, url, method, max_attempts, branch, attempts, created_at)
      SELECT ${tenant.workspaceId}, 'lead', 'connector_push', 'push', 'msg_' || md5(random()::text || n), 'https://crm.example', 'POST', 3, ${branch}, 1,
        now() - make_interval(days => ${ageDays})
      FROM generate_series(1, ${count}) AS n RETURNING id`.execute(t.ctx.db);
    const old = await insert(1100, 31, 'Delivered');
    const oldFailed = await insert(3, 45, 'Failed');
    const oldPending = await insert(2, 40, 'pending');
    const young = await insert(4, 29, 'Delivered');
    await sql`INSERT INTO delivery_attempts (delivery_id, attempt, duration_ms) SELECT id, 1, 5 FROM deliveries`.execute(t.ctx.db);

    await housekeeping(t.ctx.db, 30);

    const { rows } = await sql<{ id: number }>`SELECT id FROM deliveries WHERE workspace_id = ${tenant.workspaceId} ORDER BY id`.execute(t.ctx.db);
    expect(rows.map((row) => row.id)).toEqual([...oldPending.rows, ...young.rows].map((row) => row.id));
    const { rows: attempts } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY(${[...old.rows, ...oldFailed.rows].map((row) => row.id)})`.execute(t.ctx.db);
    expect(attempts[0]!.n).toBe(0);
  });
});
