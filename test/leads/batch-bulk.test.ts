import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { lockWaitOf, statementsOf } from '../support/statements.js';
import { testBed } from '../support/test-bed.js';
import { readTestEnvironment } from '../support/env.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { postBatch, postLead, sentNow } from '../support/requests.js';

// A batch writes the rows that certainly create a new lead set-based and runs the others one
// by one. Either way the result must be what sending the rows one by one to POST /leads gives:
// same outcomes, same leads, companies, tags and events, in the same order.

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => {
  ({ t } = bed);
});

const ROWS = [
  { name: 'New one', email: 'n1@newco.example', phone: '+1 415 555 0101', linkedin_url: 'https://www.linkedin.com/in/n-one', tags: ['VIP', 'fresh'] },
  { name: 'New two', email: 'n2@newco.example', tags: ['FRESH'], custom_fields: { 'Lead Score': 5, Hot: true } },
  { name: 'At a known company', email: 'n3@known-co.example', job_title: 'CTO', location: { city: 'Berlin', country: 'DE' }, decision_maker: true },
  { name: 'Existing again', email: 'EXISTING@acme-corp.example', tags: ['fresh'] },
  { name: 'Free mail', email: 'n4@gmail.com', phone: '020 7946 0958', links: [{ type: 'github', url: 'https://github.com/n4' }] },
  { name: 'Twin A', email: 'twin@twinco.example' },
  { name: 'Twin B', email: 'twin@twinco.example', phone: '+1 415 555 0199' },
  { name: 'Explicit', email: 'x@explicit.example', company: { name: 'Explicit Inc', website: 'https://explicit.example' } },
  { name: 'After explicit', email: 'n5@explicit.example', tags: ['late'] },
  { name: 'Bad tag id', email: 'bad@newco.example', tag_ids: [999999999] },
  { name: 'Handle only', linkedin_url: 'https://linkedin.com/in/Only-Handle', tags: ['vip'] },
  { name: 'Other new company', email: 'n7@another.example', description: 'hello', gender: 'female', language: 'de' },
  { name: 'Same phone as existing', phone: '+1 (415) 555-0000' },
];

async function prepare(tenant: Tenant) {
  const post = (body: object) => postLead(t, tenant, body);
  await post({ name: 'Existing', email: 'existing@acme-corp.example', tags: ['Old'], phone: '415 555 0000' });
  await post({ name: 'Known co', email: 'someone@known-co.example', tags: ['VIP'] });
  const { id } = (await t.ctx.db
    .selectFrom('outbox')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirstOrThrow()) as { id: number };
  return id;
}

/** The workspace's state with ids replaced by creation ranks, so two workspaces compare. */
async function snapshot(workspaceId: number, outboxAfter: number, leadIds: Array<number | null>) {
  const db = t.ctx.db;
  const leads = await db.selectFrom('leads').where('workspace_id', '=', workspaceId).orderBy('id').select('id').execute();
  const companies = await db
    .selectFrom('companies')
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .select(['id', 'name', 'domain', 'status', 'links', 'emails', 'phones', 'locations', 'industry', 'description'])
    .execute();
  const tags = await db.selectFrom('tags').where('workspace_id', '=', workspaceId).orderBy('id').select(['id', 'name', 'color', 'active']).execute();
  const leadRank = new Map(leads.map((lead, rank) => [lead.id, rank]));
  const companyRank = new Map(companies.map((company, rank) => [company.id, rank]));
  const tagRank = new Map(tags.map((tag, rank) => [tag.id, rank]));
  const events = await db.selectFrom('outbox').where('workspace_id', '=', workspaceId).where('id', '>', outboxAfter).orderBy('id').select(['topic', 'payload']).execute();
  const records = [];
  for (const lead of leads) {
    const { body } = await t.http.get(`/api/v1/leads/${lead.id}`).set(await authFor(workspaceId));
    const { id, created_at: _c, updated_at: _u, company, tags: leadTags, ...rest } = body.data;
    records.push({
      rank: leadRank.get(id),
      ...rest,
      tags: leadTags.map((tag: { id: number; name: string }) => ({ ...tag, id: tagRank.get(tag.id) })),
      company: company && { ...company, id: companyRank.get(company.id), created_at: undefined },
    });
  }
  return {
    rows: leadIds.map((id) => (id === null ? null : leadRank.get(id))),
    records,
    companies: companies.map(({ id: _id, ...company }) => company),
    tags: tags.map(({ id: _id, ...tag }) => tag),
    events: events.map((event) => {
      const payload = event.payload as Record<string, number>;
      return {
        topic: event.topic,
        lead: payload.lead_id === undefined ? undefined : leadRank.get(payload.lead_id),
        company: payload.company_id === undefined ? undefined : companyRank.get(payload.company_id),
        tag: payload.tag_id === undefined ? undefined : tagRank.get(payload.tag_id),
      };
    }),
  };
}

const tenants = new Map<number, Tenant>();
const authFor = async (workspaceId: number) => tenants.get(workspaceId)!.auth;

describe('POST /leads/batch writes new people set-based', () => {
  it('ends exactly as the same rows sent one by one to POST /leads', async () => {
    const batched = await createTenant(t.ctx.db, { name: 'Batched' });
    const single = await createTenant(t.ctx.db, { name: 'One by one' });
    tenants.set(batched.workspaceId, batched).set(single.workspaceId, single);
    const batchedSince = await prepare(batched);
    const singleSince = await prepare(single);

    const response = await t.http.post('/api/v1/leads/batch').set(batched.auth).send({ leads: ROWS });
    expect(response.status).toBe(200);

    const outcomes = [];
    for (const [index, row] of ROWS.entries()) {
      const answer = await t.http.post('/api/v1/leads').set(single.auth).send(row);
      outcomes.push(
        answer.status === 422
          ? { index, status: 'failed', lead_id: null, error: expect.any(String), field: Object.keys(answer.body.errors)[0] }
          : { index, status: answer.body.meta.status, lead_id: answer.body.data.id, warnings: answer.body.meta.warnings },
      );
    }
    expect(response.body.data.map((row: { status: string }) => row.status)).toEqual(outcomes.map((row) => row.status));
    expect(response.body.data.map((row: { warnings?: string[] }) => row.warnings)).toEqual(outcomes.map((row) => row.warnings));
    expect(response.body.data[9]).toMatchObject({ status: 'failed', field: 'tag_ids' });

    const fromBatch = await snapshot(
      batched.workspaceId,
      batchedSince,
      response.body.data.map((row: { lead_id: number | null }) => row.lead_id),
    );
    const fromSingles = await snapshot(
      single.workspaceId,
      singleSince,
      outcomes.map((row) => row.lead_id),
    );
    expect(fromBatch).toEqual(fromSingles);
    expect(fromBatch.events.filter((event) => event.topic === 'company.analyze')).toHaveLength(4);
  });

  it('undoes a row whose person another request created meanwhile, and matches it again', async () => {
    const tenant = await createTenant(t.ctx.db, { name: 'Racing' });
    // Hold a key in a concurrent transaction after the batch's lookup could have run: the
    // batch waits for it on insert, then finds the key taken and updates that lead instead.
    const client = await t.ctx.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO leads (workspace_id, name, source, emails) VALUES ($1, 'Raced', 'api', '{race@raceco.example}') RETURNING id`,
        [tenant.workspaceId],
      );
      await client.query(`INSERT INTO lead_identities (workspace_id, kind, value, lead_id) VALUES ($1, 'email', 'race@raceco.example', $2)`, [tenant.workspaceId, rows[0]!.id]);
      const pending = sentNow(
        postBatch(t, tenant, {
          leads: [
            { name: 'Calm', email: 'calm@raceco.example' },
            { name: 'Racer', email: 'race@raceco.example', tags: ['raced'] },
          ],
        }),
      );
      // Commit once the bulk statement (on Citus, the one claiming the keys) waits on the key.
      await lockWaitOf(t.ctx.pool, readTestEnvironment().citus ? 'INSERT INTO lead_identities' : 'jsonb_to_recordset');
      await client.query('COMMIT');
      const response = await pending;
      expect(response.status).toBe(200);
      expect(response.body.data.map((row: { status: string }) => row.status)).toEqual(['created', 'updated']);
      expect(response.body.data[1].lead_id).toBe(Number(rows[0]!.id));
      const lead = await t.http.get(`/api/v1/leads/${rows[0]!.id}`).set(tenant.auth);
      expect(lead.body.data).toMatchObject({ name: 'Racer', tags: [expect.objectContaining({ name: 'raced' })] });
      const count = await t.ctx.db
        .selectFrom('leads')
        .where('workspace_id', '=', tenant.workspaceId)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(2);
    } finally {
      client.release();
    }
  });

  it('writes 100 new people in a handful of statements, not several per row', async () => {
    const tenant = await createTenant(t.ctx.db, { name: 'Bulk' });
    const leads = Array.from({ length: 100 }, (_, n) => ({
      name: `Person ${n}`,
      email: `p${n}@firm${n % 7}.example`,
      phone: `+1 212 555 ${String(1000 + n)}`,
      linkedin_url: `https://www.linkedin.com/in/person-${n}`,
      tags: ['bulk', `wave-${n % 3}`],
    }));
    await t.http.get('/api/v1/me').set(tenant.auth); // the key is cached and its last use written
    const { result: response, statements } = await statementsOf(t.ctx.pool, () => t.http.post('/api/v1/leads/batch').set(tenant.auth).send({ leads }));
    expect(response.status).toBe(200);
    expect(response.body.meta).toMatchObject({ created: 100, failed: 0 });
    const ids = response.body.data.map((row: { lead_id: number }) => row.lead_id);
    expect(ids).toEqual([...ids].sort((a: number, b: number) => a - b));
    // BEGIN, lookup, companies and tags, leads, the day's intake counts (one row per workspace), COMMIT;
    // on Citus the lookup first (a batch may commit alone there), then the leads as statements of one
    // task each: their ids, rows, match keys, tags and events.
    const citus = readTestEnvironment().citus;
    const leadStatements = citus ? ['SELECT', 'INSERT', 'INSERT', 'INSERT', 'INSERT'] : ['WITH'];
    const opening = citus ? ['SELECT', 'BEGIN'] : ['BEGIN', 'SELECT'];
    expect(statements.map((text) => text.trim().split(/\s+/, 1)[0]!.toUpperCase())).toEqual([...opening, 'WITH', ...leadStatements, 'INSERT', 'COMMIT']);
    const lead = await t.http.get(`/api/v1/leads/${ids[42]}`).set(tenant.auth);
    expect(lead.body.data).toMatchObject({
      name: 'Person 42',
      emails: ['p42@firm0.example'],
      phones: ['12125551042'],
      tags: [expect.objectContaining({ name: 'bulk' }), expect.objectContaining({ name: 'wave-0' })],
      company: expect.objectContaining({ name: 'firm0.example', website: 'https://firm0.example', status: 'pending' }),
    });
  });
});
