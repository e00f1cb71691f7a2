import { beforeAll, describe, expect, it } from '@jest/globals';
import { insertCompany } from '../../src/companies/repository.js';
import type { TestApp } from '../support/app.js';
import { whileLeadsNamed } from '../support/faults.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';
import { postBatch, rowCount, uniqueEmail } from '../support/requests.js';

const bed = testBed({ tenants: [{}, { name: 'Other' }] });
let t: TestApp;
let tenant: Tenant;
let other: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant, other],
  } = bed);
});

let sequence = 0;
const email = (prefix = 'row') => uniqueEmail(prefix);
const batch = (body: object) => postBatch(t, tenant, body);
const leadCount = () => rowCount(t.ctx.db, 'leads', tenant.workspaceId);
/** What a row that matched no lead (or failed before matching) reports about matching. */
const NOTHING_MATCHED = { matched_on: null, match_kind: null, conflicts: [] };

describe('POST /leads/batch shape validation', () => {
  it('fails the whole call with 422 keyed by row when any row is malformed, and runs nothing', async () => {
    const before = await leadCount();
    const response = await batch({
      leads: [{ name: 'Fine', email: email() }, { name: 'Fine too', email: email() }, { name: 'Also fine', phone: '+1 555 010 9999' }, { email: email() }, { name: 'No contact' }],
    });
    expect(response.status).toBe(422);
    expect(response.body.errors['leads.3.name']).toEqual([expect.any(String)]);
    expect(response.body.errors['leads.4.email'][0]).toMatch(/linkedin_url/);
    expect(Object.keys(response.body.errors).every((key) => /^leads\.\d+\./.test(key))).toBe(true);
    expect(await leadCount()).toBe(before);
  });

  it('requires 1 to 100 rows', async () => {
    expect((await batch({ leads: [] })).body.errors).toHaveProperty('leads');
    expect((await batch({})).body.errors).toHaveProperty('leads');
    const tooMany = await batch({ leads: Array.from({ length: 101 }, () => ({ name: 'x', email: email() })) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors).toHaveProperty('leads');
  });

  it('rejects the call-level switches inside a row', async () => {
    const response = await batch({ leads: [{ name: 'x', email: email(), dry_run: true }] });
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toEqual(['leads.0.dry_run']);
  });
});

describe('POST /leads/batch processing', () => {
  it('answers 200 with one result per row, failing only the rows with processing problems', async () => {
    const foreignCompany = await insertCompany(t.ctx.db, { workspace_id: other.workspaceId, name: 'Foreign', domain: null, status: 'not_analyzed', links: [] });
    const existing = email('existing');
    const seeded = await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Existing', email: existing });
    const before = await leadCount();

    const response = await batch({
      on_duplicate: 'error',
      create_missing_tags: false,
      leads: [
        { name: 'Good one', email: email() },
        { name: 'Bad tag id', email: email(), tag_ids: [424242] },
        { name: 'Bad tag name', email: email(), tags: ['does-not-exist'] },
        { name: 'Foreign company', email: email(), company: { id: foreignCompany.id } },
        { name: 'Duplicate', email: existing.toUpperCase() },
        { name: 'Good two', phone: '+49 30 1234567' },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body.meta).toEqual({ created: 2, updated: 0, skipped: 0, failed: 4, total: 6, dry_run: false });
    const [good, badTagId, badTagName, foreign, duplicate, goodTwo] = response.body.data;
    expect(good).toEqual({ index: 0, status: 'created', lead_id: expect.any(Number), ...NOTHING_MATCHED, warnings: [] });
    expect(badTagId).toEqual({ index: 1, status: 'failed', lead_id: null, ...NOTHING_MATCHED, error: expect.any(String), field: 'tag_ids' });
    expect(badTagName).toEqual({ index: 2, status: 'failed', lead_id: null, ...NOTHING_MATCHED, error: expect.stringContaining('does-not-exist'), field: 'tags' });
    expect(foreign).toEqual({ index: 3, status: 'failed', lead_id: null, ...NOTHING_MATCHED, error: expect.any(String), field: 'company.id' });
    expect(duplicate).toEqual({
      index: 4,
      status: 'failed',
      lead_id: seeded.body.data.id,
      matched_on: existing,
      match_kind: 'email',
      conflicts: [],
      error: expect.stringContaining(existing),
      field: 'email',
    });
    expect(goodTwo).toMatchObject({ index: 5, status: 'created' });
    expect(await leadCount()).toBe(before + 2);
  });

  it('files every duplicate under email, even a LinkedIn or phone match', async () => {
    const handle = `batch-handle-${++sequence}`;
    await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ name: 'In', linkedin_url: `https://linkedin.com/in/${handle}`, phone: '+1 720 555 0142' });
    const response = await batch({
      on_duplicate: 'error',
      leads: [
        { name: 'A', linkedin_url: `https://www.linkedin.com/in/${handle}/` },
        { name: 'B', phone: '(720) 555-0142' },
      ],
    });
    expect(response.body.data.map((row: { field: string }) => row.field)).toEqual(['email', 'email']);
    expect(response.body.data[0].error).toMatch(/LinkedIn/);
    expect(response.body.data[1].error).toMatch(/phone/);
  });

  it('runs rows in order so later rows see earlier ones: created then updated', async () => {
    const same = email('twice');
    const response = await batch({
      leads: [
        { name: 'First', email: same },
        { name: 'Second', email: same, tags: ['batch-tag'] },
      ],
    });
    expect(response.body.data.map((row: { status: string }) => row.status)).toEqual(['created', 'updated']);
    expect(response.body.data[0].lead_id).toBe(response.body.data[1].lead_id);
    const lead = await t.http.get(`/api/v1/leads/${response.body.data[0].lead_id}`).set(tenant.auth);
    expect(lead.body.data).toMatchObject({ name: 'Second', tags: [expect.objectContaining({ name: 'batch-tag' })] });
  });

  it('skips matches under skip, with warnings on every non-failed row', async () => {
    const same = email('skip');
    await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Kept', email: same });
    const response = await batch({
      on_duplicate: 'skip',
      leads: [
        { name: 'Ignored', email: same },
        { name: 'New', email: email(), custom_fields: { Bad: { nested: true } } },
      ],
    });
    expect(response.body.data[0]).toEqual({ index: 0, status: 'skipped', lead_id: expect.any(Number), matched_on: same, match_kind: 'email', conflicts: [], warnings: [] });
    expect(response.body.data[1].warnings).toEqual([expect.stringContaining('custom_fields.bad')]);
    expect(response.body.meta).toMatchObject({ skipped: 1, created: 1 });
  });

  it('queues one website analysis per new company built from a domain, unless enrich is false', async () => {
    const since = Number(
      (
        await t.ctx.db
          .selectFrom('outbox')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirst()
      )?.id ?? 0,
    );
    const d1 = `batchco${++sequence}.com`;
    const d2 = `batchco${++sequence}.com`;
    await batch({
      leads: [
        { name: 'a', email: `a@${d1}` },
        { name: 'b', email: `b@${d1}` },
        { name: 'c', email: `c@${d2}` },
      ],
    });
    const analyses = await t.ctx.db.selectFrom('outbox').where('id', '>', since).where('topic', '=', 'company.analyze').select('id').execute();
    expect(analyses).toHaveLength(2);
    const after = Number(
      (
        await t.ctx.db
          .selectFrom('outbox')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirst()
      )?.id ?? 0,
    );
    await batch({ enrich: false, leads: [{ name: 'd', email: `d@batchco${++sequence}.com` }] });
    expect(await t.ctx.db.selectFrom('outbox').where('id', '>', after).where('topic', '=', 'company.analyze').select('id').execute()).toHaveLength(0);
  });
});

describe('POST /leads/batch dry run', () => {
  it('rolls back each row before the next: the same person twice is created twice, and nothing is saved', async () => {
    const before = await leadCount();
    const outboxBefore = await rowCount(t.ctx.db, 'outbox');
    const same = email('dry');
    const response = await batch({
      dry_run: true,
      leads: [
        { name: 'One', email: same, tags: ['dry-tag'] },
        { name: 'Two', email: same },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual([
      { index: 0, status: 'created', lead_id: null, ...NOTHING_MATCHED, warnings: [] },
      { index: 1, status: 'created', lead_id: null, ...NOTHING_MATCHED, warnings: [] },
    ]);
    expect(response.body.meta).toEqual({ created: 2, updated: 0, skipped: 0, failed: 0, total: 2, dry_run: true });
    expect(await leadCount()).toBe(before);
    expect(await rowCount(t.ctx.db, 'outbox')).toBe(outboxBefore);
    expect(await t.ctx.db.selectFrom('tags').where('name', '=', 'dry-tag').selectAll().execute()).toHaveLength(0);
  });

  it('reports existing matches honestly with null lead ids', async () => {
    const same = email('dry-existing');
    await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Existing', email: same });
    const response = await batch({ dry_run: true, leads: [{ name: 'x', email: same }] });
    expect(response.body.data[0]).toEqual({ index: 0, status: 'updated', lead_id: null, matched_on: same, match_kind: 'email', conflicts: [], warnings: [] });
  });
});

describe('POST /leads/batch and an unexpected failure', () => {
  const whileLeadsNamedExplodeFail = (work: () => Promise<void>) => whileLeadsNamed(t.ctx.db, 'Explode', work);

  it('fails that row alone with field null and the generic message, leaves nothing of it, and runs the rows after it', async () => {
    const existing = email('before-explode');
    await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Existing', email: existing });
    const explodingDomain = `explode${++sequence}.com`;
    await whileLeadsNamedExplodeFail(async () => {
      const before = await leadCount();
      const response = await batch({
        leads: [
          { name: 'Before', email: email() },
          { name: 'Explode', email: `x@${explodingDomain}`, tags: [`explode-tag-${sequence}`] },
          { name: 'Updated after', email: existing },
          { name: 'Created after', email: email() },
        ],
      });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual([
        { index: 0, status: 'created', lead_id: expect.any(Number), ...NOTHING_MATCHED, warnings: [] },
        {
          index: 1,
          status: 'failed',
          lead_id: null,
          ...NOTHING_MATCHED,
          field: null,
          error: 'This row could not be processed because of an unexpected error. Retry the request; contact support if it keeps failing.',
        },
        { index: 2, status: 'updated', lead_id: expect.any(Number), matched_on: existing, match_kind: 'email', conflicts: [], warnings: [] },
        { index: 3, status: 'created', lead_id: expect.any(Number), ...NOTHING_MATCHED, warnings: [] },
      ]);
      expect(response.body.meta).toEqual({ created: 2, updated: 1, skipped: 0, failed: 1, total: 4, dry_run: false });
      expect(await leadCount()).toBe(before + 2);
    });
    expect(await t.ctx.db.selectFrom('leads').where('workspace_id', '=', tenant.workspaceId).where('name', '=', 'Explode').select('id').execute()).toHaveLength(0);
    expect(await t.ctx.db.selectFrom('companies').where('domain', '=', explodingDomain).select('id').execute()).toHaveLength(0);
    expect(await t.ctx.db.selectFrom('tags').where('name', '=', `explode-tag-${sequence}`).select('id').execute()).toHaveLength(0);
    expect(await t.ctx.db.selectFrom('lead_identities').where('value', '=', `x@${explodingDomain}`).select('value').execute()).toHaveLength(0);
  });

  it('reruns a set-based write that failed as a whole one row at a time: every other row ends exactly once, with its company, tags and events', async () => {
    const domains = [`fallback${++sequence}.com`, `fallback${++sequence}.com`];
    const tag = `fallback-tag-${sequence}`;
    const since = Number(
      (
        await t.ctx.db
          .selectFrom('outbox')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirst()
      )?.id ?? 0,
    );
    const rows = [
      { name: 'First new', email: `first@${domains[0]}`, tags: [tag] },
      { name: 'Explode', email: email() },
      { name: 'Second new', email: `second@${domains[1]}`, tags: [tag] },
    ];
    await whileLeadsNamedExplodeFail(async () => {
      const response = await batch({ leads: rows });
      expect(response.body.data.map((row: { status: string }) => row.status)).toEqual(['created', 'failed', 'created']);
    });
    const leads = await t.ctx.db
      .selectFrom('leads')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('name', 'in', ['First new', 'Second new'])
      .select(['name', 'company_id'])
      .orderBy('name')
      .execute();
    expect(leads.map((lead) => lead.name)).toEqual(['First new', 'Second new']);
    const companies = await t.ctx.db.selectFrom('companies').where('domain', 'in', domains).select(['id', 'domain']).execute();
    expect(companies.map((company) => company.domain).sort()).toEqual([...domains].sort());
    expect(leads.map((lead) => lead.company_id).sort()).toEqual(companies.map((company) => company.id).sort());
    expect(await t.ctx.db.selectFrom('tags').where('workspace_id', '=', tenant.workspaceId).where('name', '=', tag).select('id').execute()).toHaveLength(1);
    const topics = (await t.ctx.db.selectFrom('outbox').where('id', '>', since).where('workspace_id', '=', tenant.workspaceId).select('topic').execute())
      .map((event) => event.topic)
      .sort();
    expect(topics).toEqual(['company.analyze', 'company.analyze', 'lead.created', 'lead.created']);
  });
});
