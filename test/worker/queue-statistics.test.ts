import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { analyzeWhereAutovacuumWouldNot } from '../../src/db/queue-statistics.js';

// On a server with autovacuum off the worker analyzes its queue tables as autovacuum would have:
// once more rows changed than autovacuum_analyze_threshold plus its scale factor, and only then.
// Where autovacuum is on (the embedded database) it leaves them to it.

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => {
  ({ t } = bed);
});

const autovacuumOn = async () => (await sql<{ setting: string }>`SELECT current_setting('autovacuum') AS setting`.execute(t.ctx.db)).rows[0]!.setting === 'on';
const outboxAnalyses = async () => Number((await sql<{ n: string }>`SELECT analyze_count AS n FROM pg_stat_user_tables WHERE relname = 'outbox'`.execute(t.ctx.db)).rows[0]!.n);

/** `count` pending events, their row counts flushed to the statistics at once (they otherwise reach them within seconds). */
async function writeEvents(workspaceId: number, count: number): Promise<void> {
  await t.ctx.db.connection().execute(async (session) => {
    await sql`INSERT INTO outbox (workspace_id, topic, payload) SELECT ${workspaceId}, 'lead.created', '{}'::jsonb FROM generate_series(1, ${count})`.execute(session);
    await sql`SELECT pg_stat_force_next_flush()`.execute(session);
    await sql`SELECT 1`.execute(session);
  });
}

describe('queue statistics', () => {
  it('analyzes the outbox once enough rows changed since its last analysis, and not again until more do', async () => {
    const tenant = await createTenant(t.ctx.db);
    const on = await autovacuumOn();
    const before = await outboxAnalyses();

    await writeEvents(tenant.workspaceId, 2_000);
    expect(await analyzeWhereAutovacuumWouldNot(t.ctx.db)).toEqual(on ? [] : ['outbox']);
    expect(await outboxAnalyses()).toBe(on ? before : before + 1);

    await writeEvents(tenant.workspaceId, 10);
    expect(await analyzeWhereAutovacuumWouldNot(t.ctx.db)).toEqual([]);
    expect(await outboxAnalyses()).toBe(on ? before : before + 1);
  });
});
