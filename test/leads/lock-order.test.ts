import { beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { TestApp } from '../support/app.js';
import { lockedLead, lockWaits } from '../support/held-writes.js';
import type { Tenant } from '../support/fixtures.js';
import { postBatch, postLead, sentNow } from '../support/requests.js';
import { testBed } from '../support/test-bed.js';

// Two working groups may write the same rows at once, such as an existing lead both update.
// The merge statement locks its leads in one order (lead id), whatever order its rows came in,
// so the second group waits for the first instead of deadlocking (the victim's callers would
// wait deadlock_timeout, a second). The test holds the lead that comes first in that order,
// lets a merge of rows sent in the other order wait on it, and checks that the merge has not
// locked the lead that comes second.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

/** Whether a statement run in a transaction of its own gets its locks within 300 ms (it is rolled back). */
async function runsAtOnce(text: string, values: unknown[]): Promise<boolean> {
  const probe = new pg.Client({ connectionString: t.databaseUrl });
  probe.on('error', () => {});
  await probe.connect();
  await probe.query('BEGIN');
  try {
    await probe.query(`SET LOCAL lock_timeout = '300ms'`);
    await probe.query(text, values);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return false;
    throw error;
  } finally {
    await probe.query('ROLLBACK');
    await probe.end();
  }
}

describe('lock order of the merge statement', () => {
  it('locks the leads a run of updates merges in id order, whatever order the rows come in', async () => {
    // The first lead, held locked by the test; the second, made after it, has the higher id.
    const first = await lockedLead(t, tenant);
    const second = (await postLead(t, tenant, { name: 'Second', email: 'second@lock-order.example' })).body.data;
    expect(first.leadId).toBeLessThan(second.id);

    // The later lead first: both rows are updates of one run (one merge statement).
    const batch = sentNow(
      postBatch(t, tenant, {
        leads: [
          { name: 'Second 2', email: 'second@lock-order.example' },
          { name: 'First 2', email: first.email },
        ],
      }),
    );
    await lockWaits(t, 1);
    try {
      expect(await runsAtOnce('SELECT id FROM leads WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [tenant.workspaceId, second.id])).toBe(true);
    } finally {
      await first.release();
    }
    const answer = await batch;
    expect(answer.body.data.map((row: { status: string; lead_id: number }) => [row.status, row.lead_id])).toEqual([
      ['updated', second.id],
      ['updated', first.leadId],
    ]);
  });
});
