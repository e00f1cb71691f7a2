import { beforeAll, describe, expect, it } from '@jest/globals';
import { insertCompany } from '../../src/companies/repository.js';
import { insertTag } from '../../src/tags/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';
import { lastOutboxId, outboxSince, postLead, rowCount, uniqueName } from '../support/requests.js';

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
const unique = uniqueName;
const post = (body: object, who: Tenant = tenant) => postLead(t, who, body);
const countRows = (table: 'leads' | 'companies' | 'tags' | 'outbox') => rowCount(t.ctx.db, table, tenant.workspaceId);
const outboxTopics = (since: number) => outboxSince(t.ctx.db, tenant.workspaceId, since);
const lastOutbox = () => lastOutboxId(t.ctx.db);

describe('POST /leads validation (422)', () => {
  it('requires a name', async () => {
    const response = await post({ email: 'a@acme.test' });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ errors: { name: [expect.any(String)] } });
  });

  it('files a missing contact detail under email, naming only the three singular fields', async () => {
    for (const body of [{ name: 'No Contact' }, { name: 'Empty lists', emails: [], phones: [] }, { name: 'Only job', job_title: 'CEO' }]) {
      const response = await post(body);
      expect(response.status).toBe(422);
      expect(Object.keys(response.body.errors)).toEqual(['email']);
      const [message] = response.body.errors.email as string[];
      expect(message).toMatch(/email/);
      expect(message).toMatch(/phone/);
      expect(message).toMatch(/linkedin_url/);
      expect(message).not.toMatch(/emails|phones/);
    }
  });

  it('accepts any one contact detail, including the array forms alone', async () => {
    for (const contact of [
      { email: `${unique()}@acme.test` },
      { phone: `+1 555 010 ${1000 + ++sequence}` },
      { linkedin_url: `https://linkedin.com/in/${unique()}` },
      { emails: [`${unique()}@acme.test`] },
      { phones: [`0044 20 7946 ${1000 + ++sequence}`] },
    ]) {
      expect((await post({ name: 'Contactable', enrich: false, ...contact })).status).toBe(201);
    }
  });

  it('names the offending field for formats, enums, lengths, caps and unknown fields', async () => {
    const cases: Array<[object, string]> = [
      [{ email: 'not-an-email' }, 'email'],
      [{ emails: ['ok@acme.test', 'broken'] }, 'emails.1'],
      [{ linkedin_url: 'not a url' }, 'linkedin_url'],
      [{ links: [{ type: 'myspace', url: 'https://myspace.com/x' }] }, 'links.0.type'],
      [{ on_duplicate: 'merge' }, 'on_duplicate'],
      [{ name: 'x'.repeat(256) }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ emails: Array.from({ length: 11 }, (_, i) => `e${i}@acme.test`) }, 'emails'],
      [{ phones: Array.from({ length: 11 }, (_, i) => `+1 555 000 10${10 + i}`) }, 'phones'],
      [{ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
      [{ tag_ids: Array.from({ length: 51 }, (_, i) => i + 1) }, 'tag_ids'],
      [{ links: Array.from({ length: 21 }, (_, i) => ({ type: 'other', url: `https://x.test/${i}` })) }, 'links'],
      [{ custom_fields: Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`k${i}`, 'v'])) }, 'custom_fields'],
      [{ company: { emails: Array.from({ length: 11 }, (_, i) => `c${i}@acme.test`) } }, 'company.emails'],
      [{ company: { id: 'seven' } }, 'company.id'],
      [{ company: { id: 1e30 } }, 'company.id'],
      [{ tag_ids: [99999999999999999999] }, 'tag_ids.0'],
      [{ company: { website: 'nope' } }, 'company.website'],
      [{ description: 'x'.repeat(10001) }, 'description'],
      [{ favourite_colour: 'blue' }, 'favourite_colour'],
      [{ decision_maker: 'yes' }, 'decision_maker'],
    ];
    for (const [patch, field] of cases) {
      const response = await post({ name: 'Jane', email: 'jane@acme.test', ...patch });
      expect({ field, status: response.status }).toEqual({ field, status: 422 });
      expect(Object.keys(response.body.errors)).toContain(field);
      expect(response.body.errors[field][0]).toEqual(expect.any(String));
    }
  });

  it('rejects unknown tag names when create_missing_tags is false, unknown or foreign tag ids, and foreign companies', async () => {
    const foreignTag = await insertTag(t.ctx.db, { workspace_id: other.workspaceId, name: 'theirs', color: null, active: true });
    const foreignCompany = await insertCompany(t.ctx.db, { workspace_id: other.workspaceId, name: 'Theirs Inc', domain: null, status: 'not_analyzed', links: [] });
    const before = await countRows('leads');
    const cases: Array<[object, string]> = [
      [{ tags: ['never-seen'], create_missing_tags: false }, 'tags'],
      [{ tag_ids: [987654] }, 'tag_ids'],
      [{ tag_ids: [foreignTag.id] }, 'tag_ids'],
      [{ company: { id: foreignCompany.id } }, 'company.id'],
    ];
    for (const [patch, field] of cases) {
      const response = await post({ name: 'Jane', email: `${unique()}@acme.test`, ...patch });
      expect(response.status).toBe(422);
      expect(Object.keys(response.body.errors)).toEqual([field]);
    }
    expect(await countRows('leads')).toBe(before);
    expect(await t.ctx.db.selectFrom('tags').where('name', '=', 'never-seen').selectAll().execute()).toHaveLength(0);
  });
});

describe('POST /leads creation', () => {
  it('answers 201 with the saved lead and meta', async () => {
    const email = `${unique('jane')}@gmail.com`;
    const response = await post({ name: 'Jane Doe', email, job_title: 'CTO', decision_maker: true, language: 'en', gender: 'female', description: 'Met at SaaStr' });
    expect(response.status).toBe(201);
    expect(response.body.meta).toEqual({ status: 'created', dry_run: false, matched_on: null, match_kind: null, conflicts: [], warnings: [] });
    expect(response.body.data).toMatchObject({
      id: expect.any(Number),
      name: 'Jane Doe',
      job_title: 'CTO',
      decision_maker: true,
      language: 'en',
      gender: 'female',
      description: 'Met at SaaStr',
      stage: 'new',
      source: 'api',
      emails: [email],
      phones: [],
      links: [],
      location: null,
      tags: [],
      company: null,
      custom_fields: {},
    });
    const stored = await t.ctx.db.selectFrom('leads').where('id', '=', response.body.data.id).select(['chargeable', 'workspace_id']).executeTakeFirstOrThrow();
    expect(stored).toEqual({ chargeable: false, workspace_id: tenant.workspaceId });
  });

  it('normalizes custom fields: slugified keys, yes/no booleans, objects and arrays dropped', async () => {
    const response = await post({
      name: 'Custom',
      email: `${unique()}@gmail.com`,
      custom_fields: { 'Is VIP': true, 'Lead Source': 'Webinar', Churned: false, Seats: 25, Nested: { a: 1 }, List: [1, 2] },
    });
    expect(response.status).toBe(201);
    expect(response.body.data.custom_fields).toEqual({ is_vip: 'yes', lead_source: 'Webinar', churned: 'no', seats: '25' });
  });

  it('normalizes phones to digits and silently drops numbers under 7 digits', async () => {
    const response = await post({ name: 'Phones', phone: '12-34', phones: ['+1 (415) 555-0199', '555 12'], email: `${unique()}@gmail.com` });
    expect(response.status).toBe(201);
    expect(response.body.data.phones).toEqual(['14155550199']);
    expect(response.body.meta.warnings).toEqual([]);
    const onlyShort = await post({ name: 'Short', phone: '123' });
    expect(onlyShort.status).toBe(201);
    expect(onlyShort.body.data.phones).toEqual([]);
  });

  it('merges email and emails lower-cased and deduplicated, capped at 10 after merging', async () => {
    const base = unique('merge');
    const emails = Array.from({ length: 10 }, (_, i) => `${base}.${i}@gmail.com`);
    const response = await post({ name: 'Merged', email: `${base.toUpperCase()}@GMAIL.COM`, emails: [emails[0]!.toUpperCase(), ...emails.slice(1)] });
    expect(response.status).toBe(201);
    expect(response.body.data.emails).toHaveLength(10);
    expect(response.body.data.emails[0]).toBe(`${base}@gmail.com`);
    expect(response.body.data.emails).not.toContain(emails[9]);
  });

  it('stores links and the LinkedIn URL, and the first location', async () => {
    const handle = unique('links');
    const response = await post({
      name: 'Linked',
      linkedin_url: `https://www.linkedin.com/in/${handle}/`,
      links: [{ type: 'github', url: `https://github.com/${handle}` }],
      location: { country: 'DE', city: 'Berlin', zip_code: '10115' },
    });
    expect(response.status).toBe(201);
    expect(response.body.data.links).toEqual([
      { type: 'linkedin', url: `https://www.linkedin.com/in/${handle}/` },
      { type: 'github', url: `https://github.com/${handle}` },
    ]);
    expect(response.body.data.location).toEqual({ country: 'DE', state: null, city: 'Berlin', address: null, zip_code: '10115' });
  });

  it('creates missing tags, reuses existing ones case-insensitively, and attaches tag ids', async () => {
    const existing = await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Webinar', color: '#123456', active: true });
    const byId = await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Imported', color: null, active: true });
    const fresh = unique('tag');
    const response = await post({ name: 'Tagged', email: `${unique()}@gmail.com`, tags: ['webinar', fresh, fresh.toUpperCase()], tag_ids: [byId.id] });
    expect(response.status).toBe(201);
    const tags = response.body.data.tags as Array<{ id: number; name: string; color: string | null }>;
    expect(tags.map((tag) => tag.name).sort()).toEqual(['Imported', 'Webinar', fresh].sort());
    expect(tags.find((tag) => tag.name === 'Webinar')).toEqual({ id: existing.id, name: 'Webinar', color: '#123456', active: true });
  });
});

describe('triggers written to the outbox', () => {
  it('fires lead.created on create, tag_added only for newly added tags on update, nothing on skip', async () => {
    const email = `${unique('trig')}@gmail.com`;
    const tag = unique('first');
    let since = await lastOutbox();
    const created = await post({ name: 'Trigger', email, tags: [tag] });
    expect((await outboxTopics(since)).map((event) => event.topic)).toEqual(['lead.created']);

    since = await lastOutbox();
    await post({ name: 'Trigger', email, tags: [tag] });
    expect(await outboxTopics(since)).toEqual([]);

    since = await lastOutbox();
    const newTag = unique('second');
    const updated = await post({ name: 'Trigger', email, tags: [tag, newTag] });
    const added = updated.body.data.tags.find((candidate: { name: string }) => candidate.name === newTag);
    expect(await outboxTopics(since)).toEqual([{ topic: 'lead.tag_added', payload: { lead_id: created.body.data.id, tag_id: added.id } }]);

    since = await lastOutbox();
    await post({ name: 'Trigger', email, tags: [unique('third')], on_duplicate: 'skip' });
    expect(await outboxTopics(since)).toEqual([]);
  });
});

describe('dry run', () => {
  it('previews a create without saving a lead, tag, company or event', async () => {
    const before = await Promise.all([countRows('leads'), countRows('tags'), countRows('companies'), countRows('outbox')]);
    const domain = `${unique('preview')}.com`;
    const response = await post({ name: 'Preview', email: `p@${domain}`, tags: [unique('ptag')], dry_run: true });
    expect(response.status).toBe(200);
    expect(response.body.meta).toEqual({ status: 'created', dry_run: true, matched_on: null, match_kind: null, conflicts: [], warnings: [] });
    expect(response.body.data).toMatchObject({ id: null, name: 'Preview', company: { id: null, name: domain, status: 'pending' } });
    expect(response.body.data.tags[0].id).toBeNull();
    expect(await Promise.all([countRows('leads'), countRows('tags'), countRows('companies'), countRows('outbox')])).toEqual(before);
  });

  it('reports an existing match honestly and changes nothing', async () => {
    const email = `${unique('dry')}@gmail.com`;
    const first = await post({ name: 'Real', email });
    const preview = await post({ name: 'Would rename', email, dry_run: true });
    expect(preview.status).toBe(200);
    expect(preview.body.meta).toMatchObject({ status: 'updated', dry_run: true, matched_on: email });
    expect(preview.body.data).toMatchObject({ id: first.body.data.id, name: 'Would rename' });
    expect((await t.http.get(`/api/v1/leads/${first.body.data.id}`).set(tenant.auth)).body.data.name).toBe('Real');
    const errorPreview = await post({ name: 'x', email, dry_run: true, on_duplicate: 'error' });
    expect(errorPreview.status).toBe(409);
  });

  it('answers a match under on_duplicate error with the full 409 duplicate_lead body, and writes nothing', async () => {
    const email = `${unique('dry-error')}@gmail.com`;
    const first = await post({ name: 'Real', email, job_title: 'CTO' });
    const leadId = first.body.data.id as number;
    const before = await Promise.all([countRows('leads'), countRows('tags'), countRows('companies'), countRows('outbox')]);
    const response = await post({
      name: 'Would rename',
      email: email.toUpperCase(),
      job_title: 'CEO',
      tags: [unique('dry-error-tag')],
      company: { website: `https://${unique('dryerror')}.com` },
      dry_run: true,
      on_duplicate: 'error',
    });
    expect({ status: response.status, body: response.body }).toEqual({
      status: 409,
      body: {
        error: 'duplicate_lead',
        message: `A lead with this email (${email}) already exists: lead ${leadId}.`,
        matched_on: email,
        match_kind: 'email',
        conflicts: [],
        lead_id: leadId,
      },
    });
    expect(await Promise.all([countRows('leads'), countRows('tags'), countRows('companies'), countRows('outbox')])).toEqual(before);
    expect((await t.http.get(`/api/v1/leads/${leadId}`).set(tenant.auth)).body.data).toEqual(first.body.data);
  });
});
