import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import pg from 'pg';
import { inTransactionRetried } from '../../src/db/conflicts.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { postLead } from '../support/requests.js';

// Idempotency-Key under concurrency and over time: a key still held by another transaction,
// one key with two bodies at once, the purge after 24 hours, and the rerun of a transaction
// PostgreSQL aborted as a deadlock.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => { ({ t, tenants: [tenant] } = bed); });

let sequence = 0;
const person = () => ({ name: 'Race Condition', email: `race${++sequence}@gmail.com` });
const post = (body: object, idempotencyKey: string) => postLead(t, tenant, body, { 'Idempotency-Key': idempotencyKey });
const recordsOf = async (key: string) => Number((await t.ctx.db.selectFrom('idempotency_records').where('key', '=', key)
  .select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

describe('Idempotency-Key under concurrency', () => {
  it('answers 409 idempotency_key_in_progress when the key stays claimed past the wait', async () => {
    const idempotencyKey = `held-${Date.now()}`;
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      // Another request's claim, uncommitted: the service waits on it (10 s) and gives up.
      await holder.query('BEGIN');
      await holder.query('INSERT INTO idempotency_records (api_key_id, key, fingerprint) VALUES ($1, $2, $3)', [tenant.keyId, idempotencyKey, 'other']);
      const response = await post(person(), idempotencyKey);
      expect({ status: response.status, body: response.body }).toEqual({ status: 409, body: {
        error: 'idempotency_key_in_progress',
        message: 'A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.',
      } });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  }, 40_000);

  it('runs one of two different bodies sent at once under one key; the other is idempotency_key_reuse', async () => {
    const idempotencyKey = `two-bodies-${Date.now()}`;
    const [first, second] = [person(), person()];
    const responses = await Promise.all([post(first, idempotencyKey), post(second, idempotencyKey)]);
    expect(responses.map((response) => response.status).sort()).toEqual([201, 409]);
    const refused = responses.find((response) => response.status === 409)!;
    expect(refused.body).toEqual({ error: 'idempotency_key_reuse', message: 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.' });
    const created = responses.find((response) => response.status === 201)!;
    const emails = await t.ctx.db.selectFrom('lead_identities').where('workspace_id', '=', tenant.workspaceId)
      .where('value', 'in', [first.email, second.email]).select('value').execute();
    expect(emails.map((row) => row.value)).toEqual([created.body.data.emails[0]]);
  });
});

describe('the 24 h purge', () => {
  it('deletes records past the replay window and keeps younger ones', async () => {
    const [old, young] = [`old-${Date.now()}`, `young-${Date.now()}`];
    expect((await post(person(), old)).status).toBe(201);
    expect((await post(person(), young)).status).toBe(201);
    await sql`UPDATE idempotency_records SET created_at = now() - interval '24 hours 1 minute' WHERE key = ${old}`.execute(t.ctx.db);
    await sql`UPDATE idempotency_records SET created_at = now() - interval '23 hours 59 minutes' WHERE key = ${young}`.execute(t.ctx.db);
    await housekeeping(t.ctx.db, t.ctx.config.DELIVERY_RETENTION_DAYS);
    expect([await recordsOf(old), await recordsOf(young)]).toEqual([0, 1]);
  });
});

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => { resolve = done; });
  return { promise, resolve };
}

describe('deadlock retry', () => {
  it('reruns the transaction PostgreSQL aborted as a deadlock victim; both writers succeed', async () => {
    await sql`CREATE TABLE deadlock_probe (id integer PRIMARY KEY, n integer NOT NULL)`.execute(t.ctx.db);
    await sql`INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)`.execute(t.ctx.db);
    // Two writers lock the rows in opposite orders; each waits for the other's first lock
    // before taking its second one, so the first attempts deadlock for certain.
    const locked = { 1: signal(), 2: signal() };
    const runs: number[] = [];
    const writer = (first: 1 | 2, second: 1 | 2) => {
      let attempt = 0;
      return inTransactionRetried(t.ctx.db, async (trx) => {
        attempt += 1;
        runs.push(first);
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${first}`.execute(trx);
        if (attempt === 1) {
          locked[first].resolve();
          await locked[second].promise;
        }
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${second}`.execute(trx);
        return first;
      });
    };
    const results = await Promise.all([writer(1, 2), writer(2, 1)]);
    expect(results).toEqual([1, 2]);
    expect(runs).toHaveLength(3);
    const rows = await sql<{ id: number; n: number }>`SELECT id, n FROM deadlock_probe ORDER BY id`.execute(t.ctx.db);
    expect(rows.rows).toEqual([{ id: 1, n: 2 }, { id: 2, n: 2 }]);
  });
});
