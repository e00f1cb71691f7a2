import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { readTestEnvironment } from '../support/env.js';
import { lockWaitOf } from '../support/statements.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';
import { postLead, rowCount, sentNow } from '../support/requests.js';

// POST /leads writes a new person in one autocommit statement (no transaction). When another
// request takes one of the person's keys between the lookup and that statement, the statement
// must write nothing at all, and the request must end as if it had come second: updated.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

const count = (table: 'leads' | 'lead_identities' | 'lead_tags' | 'outbox') => rowCount(t.ctx.db, table);

describe('POST /leads racing another writer of the same person', () => {
  it('writes nothing from the lost statement and updates the winner', async () => {
    // The company and the tag exist, so the request takes the direct path.
    await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ name: 'Setup', email: 'setup@direct.example', tags: ['racing'] });
    const client = await t.ctx.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO leads (workspace_id, name, source, emails) VALUES ($1, 'Winner', 'api', '{race@direct.example}') RETURNING id`,
        [tenant.workspaceId],
      );
      const winner = Number(rows[0]!.id);
      await client.query(`INSERT INTO lead_identities (workspace_id, kind, value, lead_id) VALUES ($1, 'email', 'race@direct.example', $2)`, [tenant.workspaceId, winner]);
      const before = { leads: await count('leads'), identities: await count('lead_identities'), tags: await count('lead_tags'), outbox: await count('outbox') };

      // Looks up (sees nothing committed), claims the phone, then waits on the email key.
      const pending = sentNow(postLead(t, tenant, { name: 'Loser', email: 'race@direct.example', phone: '+1 415 555 0177', tags: ['racing'] }));
      // Commit only once the direct statement (the one taking a lead id first; on Citus, the call that writes on the workspace's node) waits on the email key.
      await lockWaitOf(t.ctx.pool, readTestEnvironment().citus ? 'delegated_workspace_steps' : 'pg_get_serial_sequence');
      await client.query('COMMIT');
      const response = await pending;

      expect(response.status).toBe(200);
      expect(response.body.meta).toMatchObject({ status: 'updated', matched_on: 'race@direct.example' });
      expect(response.body.data).toMatchObject({ id: winner, name: 'Loser', phones: ['14155550177'], tags: [expect.objectContaining({ name: 'racing' })] });
      // The winner's lead row and key came from the other writer; this request added only
      // the phone key, the tag and its lead.tag_added event to that lead.
      expect(await count('leads')).toBe(before.leads + 1);
      expect(await count('lead_identities')).toBe(before.identities + 2);
      expect(await count('lead_tags')).toBe(before.tags + 1);
      expect(await count('outbox')).toBe(before.outbox + 1);
    } finally {
      client.release();
    }
  });
});
