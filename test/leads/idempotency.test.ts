import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import pg from 'pg';
import { sessionLimitsOf } from '../../src/console-auth/service.js';
import { housekeeping } from '../../src/worker/housekeeping.js';
import type { TestApp } from '../support/app.js';
import { addKey, type Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { postBatch, postLead, rowCount } from '../support/requests.js';

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

let sequence = 0;
const key = () => `idem-${++sequence}-${Date.now()}`;
const person = () => ({ name: 'Idem Potent', email: `idem${++sequence}@gmail.com`, tags: [`idem-tag-${sequence}`] });
const post = (path: '/api/v1/leads' | '/api/v1/leads/batch', body: object, idempotencyKey: string, who: Tenant = tenant) =>
  (path === '/api/v1/leads' ? postLead : postBatch)(t, who, body, { 'Idempotency-Key': idempotencyKey });
const count = (table: 'leads' | 'tags' | 'outbox') => rowCount(t.ctx.db, table);
const recordsOf = async (key: string) =>
  Number(
    (
      await t.ctx.db
        .selectFrom('idempotency_records')
        .where('key', '=', key)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('Idempotency-Key on POST /leads', () => {
  it('replays the stored answer for the same body without running anything again', async () => {
    const idempotencyKey = key();
    const body = person();
    const first = await post('/api/v1/leads', body, idempotencyKey);
    expect(first.status).toBe(201);
    expect(first.headers['idempotency-replayed']).toBeUndefined();
    const counts = await Promise.all([count('leads'), count('tags'), count('outbox')]);

    // Same JSON with keys in another order is the same body.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const replay = await post('/api/v1/leads', reordered, idempotencyKey);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(await Promise.all([count('leads'), count('tags'), count('outbox')])).toEqual(counts);
  });

  it('answers 409 idempotency_key_reuse for the same key with a different body', async () => {
    const idempotencyKey = key();
    const body = person();
    await post('/api/v1/leads', body, idempotencyKey);
    const reuse = await post('/api/v1/leads', { ...body, job_title: 'Changed' }, idempotencyKey);
    expect(reuse.status).toBe(409);
    expect(reuse.body).toEqual({ error: 'idempotency_key_reuse', message: expect.any(String) });
  });

  it('fingerprints dry_run too: a dry run then a real call under one key is rejected', async () => {
    const idempotencyKey = key();
    const body = person();
    const preview = await post('/api/v1/leads', { ...body, dry_run: true }, idempotencyKey);
    expect(preview.status).toBe(200);
    const replayedPreview = await post('/api/v1/leads', { ...body, dry_run: true }, idempotencyKey);
    expect(replayedPreview.headers['idempotency-replayed']).toBe('true');
    expect((await post('/api/v1/leads', body, idempotencyKey)).body.error).toBe('idempotency_key_reuse');
  });

  it('fingerprints the body as sent: spelling out a default is a different body', async () => {
    const idempotencyKey = key();
    const body = person();
    expect((await post('/api/v1/leads', body, idempotencyKey)).status).toBe(201);
    const explicit = await post('/api/v1/leads', { ...body, dry_run: false }, idempotencyKey);
    expect(explicit.status).toBe(409);
    expect(explicit.body.error).toBe('idempotency_key_reuse');
  });

  it('scopes keys to the API key that sent them', async () => {
    const idempotencyKey = key();
    const secondKey = await addKey(t.ctx.db, tenant);
    const first = await post('/api/v1/leads', person(), idempotencyKey);
    const other = await post('/api/v1/leads', person(), idempotencyKey, secondKey);
    expect(first.status).toBe(201);
    expect(other.status).toBe(201);
    expect(other.headers['idempotency-replayed']).toBeUndefined();
  });

  it('never stores an error: a retry after a 409 or 422 runs afresh', async () => {
    const existing = person();
    await t.http.post('/api/v1/leads').set(tenant.auth).send(existing);
    const idempotencyKey = key();
    const duplicate = { ...existing, on_duplicate: 'error' };
    expect((await post('/api/v1/leads', duplicate, idempotencyKey)).status).toBe(409);
    const again = await post('/api/v1/leads', duplicate, idempotencyKey);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('duplicate_lead');
    expect(again.headers['idempotency-replayed']).toBeUndefined();

    const fixKey = key();
    expect((await post('/api/v1/leads', { name: 'Broken' }, fixKey)).status).toBe(422);
    expect((await post('/api/v1/leads', person(), fixKey)).status).toBe(201);
  });

  it('rejects empty keys and keys over 255 characters with 400, and accepts exactly 255', async () => {
    for (const invalid of ['', 'x'.repeat(256)]) {
      const response = await post('/api/v1/leads', person(), invalid);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_idempotency_key', message: expect.any(String) });
    }
    expect((await post('/api/v1/leads', person(), `${'y'.repeat(250)}${++sequence}`.slice(-255))).status).toBe(201);
  });

  it('runs concurrent requests with one key once; the others replay its answer', async () => {
    const idempotencyKey = key();
    const body = person();
    const leadsBefore = await count('leads');
    const responses = await Promise.all(Array.from({ length: 6 }, () => post('/api/v1/leads', body, idempotencyKey)));
    expect(responses.map((response) => response.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(responses.filter((response) => response.headers['idempotency-replayed'] === 'true')).toHaveLength(5);
    expect(new Set(responses.map((response) => response.body.data.id)).size).toBe(1);
    expect(await count('leads')).toBe(leadsBefore + 1);
  });

  it('replays an answer stored 23 h 59 min ago and runs afresh once it is 24 h 01 min old', async () => {
    const idempotencyKey = key();
    const body = person();
    const first = await post('/api/v1/leads', body, idempotencyKey);
    expect(first.status).toBe(201);
    const storedAgo = (age: string) => sql`UPDATE idempotency_records SET created_at = now() - ${age}::interval WHERE key = ${idempotencyKey}`.execute(t.ctx.db);

    await storedAgo('23 hours 59 minutes');
    const replay = await post('/api/v1/leads', body, idempotencyKey);
    expect({ status: replay.status, replayed: replay.headers['idempotency-replayed'], body: replay.body }).toEqual({ status: 201, replayed: 'true', body: first.body });

    await storedAgo('24 hours 1 minute');
    const afresh = await post('/api/v1/leads', body, idempotencyKey);
    expect(afresh.status).toBe(200);
    expect(afresh.body.meta.status).toBe('updated');
    expect(afresh.headers['idempotency-replayed']).toBeUndefined();
  });
});

describe('Idempotency-Key on POST /leads/batch', () => {
  it('stores a batch answer even when every row failed, and replays the same failed rows', async () => {
    const idempotencyKey = key();
    const body = { create_missing_tags: false, leads: [{ name: 'a', email: `b${++sequence}@gmail.com`, tags: ['missing-tag'] }] };
    const first = await post('/api/v1/leads/batch', body, idempotencyKey);
    expect(first.status).toBe(200);
    expect(first.body.meta.failed).toBe(1);
    await t.ctx.db.insertInto('tags').values({ workspace_id: tenant.workspaceId, name: 'missing-tag', color: null, active: true }).execute();
    const replay = await post('/api/v1/leads/batch', body, idempotencyKey);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
  });

  it('answers 409 idempotency_key_reuse for the same key with another body, and runs nothing', async () => {
    const idempotencyKey = key();
    const first = await post('/api/v1/leads/batch', { leads: [person()] }, idempotencyKey);
    expect(first.status).toBe(200);
    const counts = await Promise.all([count('leads'), count('tags'), count('outbox')]);
    const reuse = await post('/api/v1/leads/batch', { leads: [person()] }, idempotencyKey);
    expect({ status: reuse.status, body: reuse.body }).toEqual({
      status: 409,
      body: {
        error: 'idempotency_key_reuse',
        message: 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.',
      },
    });
    expect(await Promise.all([count('leads'), count('tags'), count('outbox')])).toEqual(counts);
  });

  it('checks the body before the key length: a bad body with an over-long key is 422, not 400', async () => {
    const response = await post('/api/v1/leads/batch', { leads: [{ email: `nameless${++sequence}@gmail.com` }] }, 'k'.repeat(256));
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toEqual(['leads.0.name']);
  });

  it('validates before the replay check: a 422 batch can be fixed and resent under the same key', async () => {
    const idempotencyKey = key();
    expect((await post('/api/v1/leads/batch', { leads: [{ email: `c${++sequence}@gmail.com` }] }, idempotencyKey)).status).toBe(422);
    const fixed = await post('/api/v1/leads/batch', { leads: [{ name: 'Fixed', email: `c${sequence}@gmail.com` }] }, idempotencyKey);
    expect(fixed.status).toBe(200);
    expect(fixed.body.data[0].status).toBe('created');
    expect((await post('/api/v1/leads/batch', { leads: [{ name: 'x', email: 'x@gmail.com' }] }, 'k'.repeat(256))).status).toBe(400);
  });
});

// Under concurrency and over time: a key still held by another transaction, one key with two
// bodies at once, and the purge after 24 hours.
describe('Idempotency-Key under concurrency', () => {
  it('answers 409 idempotency_key_in_progress when the key stays claimed past the wait', async () => {
    const idempotencyKey = `held-${Date.now()}`;
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      // Another request's claim, uncommitted: the service waits on it once, for the documented 10 s, and gives up.
      await holder.query('BEGIN');
      await holder.query('INSERT INTO idempotency_records (workspace_id, api_key_id, key, fingerprint) VALUES ($1, $2, $3, $4)', [
        tenant.workspaceId,
        tenant.keyId,
        idempotencyKey,
        'other',
      ]);
      const sentAt = Date.now();
      const response = await post('/api/v1/leads', person(), idempotencyKey);
      const waitedSeconds = (Date.now() - sentAt) / 1000;
      expect({ status: response.status, body: response.body, waitedTheDocumented10s: waitedSeconds >= 9.5 && waitedSeconds < 15 }).toEqual({
        status: 409,
        body: {
          error: 'idempotency_key_in_progress',
          message: 'A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.',
        },
        waitedTheDocumented10s: true,
      });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  }, 40_000);

  it('runs one of two different bodies sent at once under one key; the other is idempotency_key_reuse', async () => {
    const idempotencyKey = `two-bodies-${Date.now()}`;
    const [first, second] = [person(), person()];
    const responses = await Promise.all([post('/api/v1/leads', first, idempotencyKey), post('/api/v1/leads', second, idempotencyKey)]);
    expect(responses.map((response) => response.status).sort()).toEqual([201, 409]);
    const refused = responses.find((response) => response.status === 409)!;
    expect(refused.body).toEqual({
      error: 'idempotency_key_reuse',
      message: 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.',
    });
    const created = responses.find((response) => response.status === 201)!;
    const emails = await t.ctx.db
      .selectFrom('lead_identities')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('value', 'in', [first.email, second.email])
      .select('value')
      .execute();
    expect(emails.map((row) => row.value)).toEqual([created.body.data.emails[0]]);
  });
});

describe('the 24 h purge', () => {
  it('deletes records past the replay window and keeps younger ones', async () => {
    const [old, young] = [`old-${Date.now()}`, `young-${Date.now()}`];
    expect((await post('/api/v1/leads', person(), old)).status).toBe(201);
    expect((await post('/api/v1/leads', person(), young)).status).toBe(201);
    await sql`UPDATE idempotency_records SET created_at = now() - interval '24 hours 1 minute' WHERE key = ${old}`.execute(t.ctx.db);
    await sql`UPDATE idempotency_records SET created_at = now() - interval '23 hours 59 minutes' WHERE key = ${young}`.execute(t.ctx.db);
    await housekeeping(t.ctx.db, t.ctx.config.DELIVERY_RETENTION_DAYS, sessionLimitsOf(t.ctx.config), t.ctx.config.AUDIT_RETENTION_DAYS);
    expect([await recordsOf(old), await recordsOf(young)]).toEqual([0, 1]);
  });
});
