import { beforeAll, describe, expect, it } from '@jest/globals';
import { insertCompany } from '../../src/companies/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { lastOutboxId, outboxSince, postLead, rowCount, uniqueEmail, uniqueName } from '../support/requests.js';

// Company resolution without company.id (contract): the payload's registrable domain decides
// (company.website's, else the person's business email's); the company holding it is joined,
// else a domainless company of the payload's name takes it, else a new one is created. Without
// a domain the name alone joins or creates.

const bed = testBed({ tenants: [] });
let t: TestApp;
beforeAll(() => {
  ({ t } = bed);
});

const unique = uniqueName;
const post = (tenant: Tenant, body: object) => postLead(t, tenant, body);
const gmail = () => uniqueEmail('someone');

const companiesOf = (workspaceId: number) =>
  t.ctx.db.selectFrom('companies').where('workspace_id', '=', workspaceId).orderBy('id').select(['id', 'name', 'domain', 'status', 'links']).execute();
const analyzeEvents = async (workspaceId: number) =>
  (await t.ctx.db.selectFrom('outbox').where('workspace_id', '=', workspaceId).where('topic', '=', 'company.analyze').select('payload').orderBy('id').execute()).map(
    (event) => (event.payload as { company_id: number }).company_id,
  );

describe('company resolution on POST /leads', () => {
  it('lets the website domain decide over the email domain, so one website domain is one company', async () => {
    const tenant = await createTenant(t.ctx.db);
    const [d1, d2] = [`${unique('first')}.com`, `${unique('second')}.com`];
    const atD1 = await post(tenant, { name: 'Email only', email: `a@${d1}` });
    const d1Company = atD1.body.data.company.id;

    const both = await post(tenant, { name: 'Both', email: `b@${d1}`, company: { website: `https://${d2}/about` } });
    expect(both.status).toBe(201);
    expect(both.body.data.company).toMatchObject({ name: d2, website: `https://${d2}/about`, status: 'pending' });
    expect(both.body.data.company.id).not.toBe(d1Company);

    const again = await post(tenant, { name: 'Again', email: `c@${unique('third')}.com`, company: { name: 'Other Name', website: `http://www.${d2}` } });
    expect(again.body.data.company.id).toBe(both.body.data.company.id);
    const atD2 = await post(tenant, { name: 'Email at d2', email: `d@${d2}` });
    expect(atD2.body.data.company.id).toBe(both.body.data.company.id);

    expect((await companiesOf(tenant.workspaceId)).map((company) => company.domain)).toEqual([d1, d2]);
  });

  it('uses registrable domains: a mail subdomain and a www.eu website are one company', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('acme')}.co.uk`;
    const byEmail = await post(tenant, { name: 'Jane', email: `jane@mail.${domain}` });
    expect(byEmail.body.data.company).toMatchObject({ name: domain, website: `https://${domain}`, status: 'pending' });
    const byWebsite = await post(tenant, { name: 'Joe', email: gmail(), company: { website: `https://www.eu.${domain}/x` } });
    expect(byWebsite.body.data.company.id).toBe(byEmail.body.data.company.id);
    expect(await companiesOf(tenant.workspaceId)).toEqual([expect.objectContaining({ domain, name: domain })]);
  });

  it('makes no company of a host that is only a public suffix, and analyzes no such website', async () => {
    const tenant = await createTenant(t.ctx.db);
    const suffixOnly = await post(tenant, { name: 'X', email: 'x@com' });
    expect(suffixOnly.status).toBe(201);
    expect(suffixOnly.body.data.company).toBeNull();

    const named = await post(tenant, { name: 'Y', email: 'y@co.uk', company: { name: 'Suffix Site', website: 'https://co.uk' } });
    expect(named.status).toBe(201);
    expect(named.body.data.company).toMatchObject({ name: 'Suffix Site', status: 'not_analyzed' });
    expect(await companiesOf(tenant.workspaceId)).toEqual([expect.objectContaining({ name: 'Suffix Site', domain: null })]);
    expect(await analyzeEvents(tenant.workspaceId)).toEqual([]);
  });

  it('keeps an IP address or a single-label host as the domain', async () => {
    const tenant = await createTenant(t.ctx.db);
    await post(tenant, { name: 'Local', email: gmail(), company: { website: 'http://127.0.0.1:8080/site' }, enrich: false });
    await post(tenant, { name: 'Dev', email: 'dev@localhost', enrich: false });
    expect((await companiesOf(tenant.workspaceId)).map((company) => company.domain)).toEqual(['127.0.0.1', 'localhost']);
  });

  it('joins by name only when the payload gives no domain, whatever the named company holds', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('named')}.io`;
    const created = await post(tenant, { name: 'First', email: `first@${domain}`, company: { name: 'Named Corp' } });
    expect(created.body.data.company).toMatchObject({ name: 'Named Corp' });
    const byName = await post(tenant, { name: 'Second', email: gmail(), company: { name: 'NAMED CORP' } });
    expect(byName.body.data.company.id).toBe(created.body.data.company.id);

    // The named company holds another domain: the payload's domain decides, a new company is made.
    const otherDomain = await post(tenant, { name: 'Third', email: gmail(), company: { name: 'Named Corp', website: `https://${unique('elsewhere')}.io` } });
    expect(otherDomain.body.data.company.id).not.toBe(created.body.data.company.id);
    expect(otherDomain.body.data.company.name).toBe('Named Corp');
  });

  it('gives the payload domain to a named company that has none, and queues its analysis', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('adopted')}.example`;
    const nameOnly = await post(tenant, { name: 'Name only', email: gmail(), company: { name: 'Adopter Ltd' } });
    const companyId = nameOnly.body.data.company.id;
    expect(nameOnly.body.data.company).toMatchObject({ website: null, status: 'not_analyzed' });

    const withDomain = await post(tenant, { name: 'With domain', email: `w@${domain}`, company: { name: 'adopter ltd', industry: 'Tea' } });
    expect(withDomain.status).toBe(201);
    expect(withDomain.body.data.company).toMatchObject({ id: companyId, name: 'Adopter Ltd', website: `https://${domain}`, industry: 'Tea', status: 'pending' });
    expect(await analyzeEvents(tenant.workspaceId)).toEqual([companyId]);

    const emailOnly = await post(tenant, { name: 'Colleague', email: `c@www.${domain}` });
    expect(emailOnly.body.data.company.id).toBe(companyId);
    expect(await companiesOf(tenant.workspaceId)).toEqual([expect.objectContaining({ id: companyId, domain })]);
  });

  it('lets company.id win over every domain and name', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('taken')}.com`;
    const holder = await post(tenant, { name: 'Holder', email: `h@${domain}` });
    const target = await insertCompany(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Target', domain: null, status: 'not_analyzed', links: [] });
    const response = await post(tenant, { name: 'By id', email: `i@${domain}`, company: { id: target.id, name: 'Holder Inc', website: `https://${domain}` } });
    expect(response.body.data.company).toMatchObject({ id: target.id, name: 'Target' });
    expect(response.body.data.company.id).not.toBe(holder.body.data.company.id);
  });
});

describe('company resolution under concurrency', () => {
  it('ends parallel leads of one new website domain in one company', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('race')}.com`;
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        post(tenant, { name: `R${n}`, email: `r${n}@${unique('d')}.com`, company: { name: `Name ${n}`, website: `https://www.${domain}/${n}` } }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(6).fill(201));
    expect(new Set(responses.map((response) => response.body.data.company.id)).size).toBe(1);
    expect((await companiesOf(tenant.workspaceId)).filter((company) => company.domain === domain)).toHaveLength(1);
  });

  it('ends parallel leads of one domainless name in one company', async () => {
    const tenant = await createTenant(t.ctx.db);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, n) => post(tenant, { name: `N${n}`, email: gmail(), company: { name: n % 2 ? 'Parallel Co' : 'PARALLEL CO' } })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(6).fill(201));
    expect(new Set(responses.map((response) => response.body.data.company.id)).size).toBe(1);
    expect(await companiesOf(tenant.workspaceId)).toHaveLength(1);
  });

  it('ends a named company taking a domain and others creating it in one company for that domain', async () => {
    const tenant = await createTenant(t.ctx.db);
    const domain = `${unique('contested')}.com`;
    await post(tenant, { name: 'Seed', email: gmail(), company: { name: 'Contested' } });
    const bodies = Array.from({ length: 9 }, (_, n) =>
      n % 3 === 0
        ? { name: `A${n}`, email: gmail(), company: { name: 'Contested', website: `https://${domain}` } }
        : n % 3 === 1
          ? { name: `B${n}`, email: gmail(), company: { website: `https://${domain}` } }
          : { name: `C${n}`, email: `c${n}@${domain}` },
    );
    const responses = await Promise.all(bodies.map((body) => post(tenant, body)));
    expect(responses.map((response) => response.status)).toEqual(Array(9).fill(201));
    expect(new Set(responses.map((response) => response.body.data.company.id)).size).toBe(1);
    expect((await companiesOf(tenant.workspaceId)).filter((company) => company.domain === domain)).toHaveLength(1);
  });
});

describe('company resolution in POST /leads/batch', () => {
  const domains = { d1: `${unique('one')}.com`, d2: `${unique('two')}.com`, uk: `${unique('acme')}.co.uk`, named: `${unique('namedco')}.example` };
  const ROWS = [
    { name: 'At d1', email: `a@${domains.d1}` },
    { name: 'Website d2, email d1', email: `b@${domains.d1}`, company: { website: `https://${domains.d2}` } },
    { name: 'Website d2 again', email: `c@${unique('three')}.com`, company: { name: 'Other Name', website: `https://www.${domains.d2}/x` } },
    { name: 'Mail subdomain', email: `e@mail.${domains.uk}` },
    { name: 'www.eu website', email: gmail(), company: { website: `https://www.eu.${domains.uk}` } },
    { name: 'Suffix only', email: 'x@com' },
    { name: 'Name only', email: gmail(), company: { name: 'Named Co' } },
    { name: 'Name and domain', email: gmail(), company: { name: 'named co', website: `https://${domains.named}` } },
    { name: 'Email at the taken domain', email: `z@${domains.named}` },
    { name: 'Email at d2', email: `f@${domains.d2}` },
  ];

  /** The workspace's companies in creation order, and each lead's company by that rank. */
  async function resolution(workspaceId: number, leadIds: number[]) {
    const companies = await companiesOf(workspaceId);
    const rank = new Map(companies.map((company, n) => [company.id, n]));
    const leads = await t.ctx.db.selectFrom('leads').where('id', 'in', leadIds).select(['id', 'company_id']).execute();
    const companyOf = new Map(leads.map((lead) => [lead.id, lead.company_id === null ? null : rank.get(lead.company_id)]));
    return {
      companies: companies.map(({ id: _id, ...company }) => company),
      leads: leadIds.map((id) => companyOf.get(id)),
      analyzed: (await analyzeEvents(workspaceId)).map((id) => rank.get(id)),
    };
  }

  it('resolves rows exactly as the same payloads sent one by one', async () => {
    const batched = await createTenant(t.ctx.db, { name: 'Batched' });
    const single = await createTenant(t.ctx.db, { name: 'One by one' });
    const response = await t.http.post('/api/v1/leads/batch').set(batched.auth).send({ leads: ROWS });
    expect(response.status).toBe(200);
    expect(response.body.meta).toMatchObject({ created: ROWS.length, failed: 0 });
    const singles = [];
    for (const row of ROWS) singles.push((await post(single, row)).body.data.id as number);

    const fromBatch = await resolution(
      batched.workspaceId,
      response.body.data.map((row: { lead_id: number }) => row.lead_id),
    );
    expect(fromBatch).toEqual(await resolution(single.workspaceId, singles));
    expect(fromBatch.companies.map((company) => [company.name, company.domain])).toEqual([
      [domains.d1, domains.d1],
      [domains.d2, domains.d2],
      [domains.uk, domains.uk],
      ['Named Co', domains.named],
    ]);
    expect(fromBatch.leads).toEqual([0, 1, 1, 2, 2, null, 3, 3, 3, 1]);
    expect(fromBatch.analyzed).toEqual([0, 1, 2, 3]);
  });
});

describe('companies filled in by a batch', () => {
  /** Two companies that exist before the rows come, one of them with a name and an industry already. */
  const seed = async (tenant: Tenant, [d1, d2]: string[]) => {
    await insertCompany(t.ctx.db, { workspace_id: tenant.workspaceId, name: null, domain: d1!, status: 'analyzed' });
    await insertCompany(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Kept Name', domain: d2!, industry: 'Kept', status: 'analyzed' });
  };
  const companiesFilled = async (workspaceId: number) =>
    (
      await t.ctx.db
        .selectFrom('companies')
        .where('workspace_id', '=', workspaceId)
        .orderBy('domain')
        .select(['name', 'domain', 'industry', 'size', 'description', 'links', 'locations', 'updated_at', 'created_at'])
        .execute()
    ).map(({ updated_at, created_at, ...company }) => ({ ...company, touched: String(updated_at) !== String(created_at) }));

  it('fills what the companies lack exactly as the same rows sent one by one, in their order, and leaves a company it would not change untouched', async () => {
    const [d1, d2, d3] = [`${unique('fill-a')}.com`, `${unique('fill-b')}.com`, `${unique('fill-c')}.com`];
    const rows = [
      { name: 'R1', email: gmail(), company: { name: 'Alpha', website: `https://${d1}`, industry: 'Tools' } },
      { name: 'R2', email: gmail(), company: { name: 'Alpha', website: `https://${d1}`, industry: 'Tools' } },
      { name: 'R3', email: gmail(), company: { website: `https://${d1}`, size: '11-50', description: 'Later details' } },
      { name: 'R4', email: gmail(), company: { name: 'Alpha', website: `https://${d1}`, industry: 'Tools', location: { city: 'Oslo' } } },
      { name: 'R5', email: `r5@${d2}`, company: { name: 'Kept Name', industry: 'Kept' } },
      // A company the batch creates: its first row alone, the later ones fill it in.
      { name: 'R6', email: gmail(), company: { name: 'Gamma', website: `https://${d3}`, industry: 'Made' } },
      { name: 'R7', email: gmail(), company: { name: 'Gamma', website: `https://${d3}`, size: '2-10' } },
      { name: 'R8', email: gmail(), company: { name: 'Gamma', website: `https://${d3}`, size: '2-10' } },
      { name: 'R9', email: gmail(), company: { name: 'Other Gamma', website: `https://${d3}`, description: 'Third' } },
    ];
    const batched = await createTenant(t.ctx.db, { name: 'Filled by a batch' });
    const single = await createTenant(t.ctx.db, { name: 'Filled one by one' });
    await seed(batched, [d1, d2]);
    await seed(single, [d1, d2]);
    const emails = (tenant: Tenant) => rows.map((row) => ({ ...row, email: row.email.replace('@', `+${tenant.workspaceId}@`) }));
    const response = await t.http
      .post('/api/v1/leads/batch')
      .set(batched.auth)
      .send({ leads: emails(batched) });
    expect(response.body.meta).toMatchObject({ created: rows.length, failed: 0 });
    for (const row of emails(single)) expect((await post(single, row)).status).toBe(201);

    const filled = await companiesFilled(batched.workspaceId);
    const fromSingles = await companiesFilled(single.workspaceId);
    // A company the batch created and filled in one transaction has one timestamp: compare what is stored.
    const stored = (companies: typeof filled) => companies.map(({ touched: _touched, ...company }) => company);
    expect(stored(filled)).toEqual(stored(fromSingles));
    expect([filled, fromSingles].map((companies) => companies.slice(0, 2).map((company) => company.touched))).toEqual([
      [true, false],
      [true, false],
    ]);
    expect(filled).toEqual([
      expect.objectContaining({ domain: d1, name: 'Alpha', industry: 'Tools', size: '11-50', description: 'Later details' }),
      expect.objectContaining({ domain: d2, name: 'Kept Name', industry: 'Kept' }),
      expect.objectContaining({ domain: d3, name: 'Gamma', industry: 'Made', size: '2-10', description: 'Third' }),
    ]);
    expect(filled[0]!.locations).toEqual([expect.objectContaining({ city: 'Oslo' })]);
  });
});

describe('companies built, joined and filled on POST /leads', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(t.ctx.db);
  });

  it('builds a company from a business email domain, pending analysis, with an analysis job queued', async () => {
    const domain = `${unique('globex')}.com`;
    const since = await lastOutboxId(t.ctx.db);
    const response = await post(tenant, { name: 'Hank', email: `hank@${domain}` });
    expect(response.status).toBe(201);
    expect(response.body.data.company).toMatchObject({ id: expect.any(Number), name: domain, website: `https://${domain}`, status: 'pending', tags: [] });
    const events = await outboxSince(t.ctx.db, tenant.workspaceId, since);
    expect(events.map((event) => event.topic).sort()).toEqual(['company.analyze', 'lead.created']);
    expect(events.find((event) => event.topic === 'company.analyze')!.payload).toEqual({ company_id: response.body.data.company.id });

    const colleague = await post(tenant, { name: 'Marge', email: `marge@${domain.toUpperCase()}` });
    expect(colleague.body.data.company.id).toBe(response.body.data.company.id);
  });

  it('never builds a company from a free-mail domain', async () => {
    const before = await rowCount(t.ctx.db, 'companies', tenant.workspaceId);
    const response = await post(tenant, { name: 'Free', email: `${unique()}@yahoo.com`, emails: [`${unique()}@outlook.com`] });
    expect(response.body.data.company).toBeNull();
    expect(await rowCount(t.ctx.db, 'companies', tenant.workspaceId)).toBe(before);
  });

  it('prefers the website domain, keeps payload details, and skips analysis when enrich is false', async () => {
    const domain = `${unique('initech')}.io`;
    const since = await lastOutboxId(t.ctx.db);
    const response = await post(tenant, {
      name: 'Peter',
      email: `${unique()}@gmail.com`,
      enrich: false,
      company: {
        name: 'Initech',
        website: `https://www.${domain}/about`,
        linkedin_url: 'https://linkedin.com/company/initech',
        industry: 'Software',
        size: '51-200',
        description: 'TPS reports',
        location: { country: 'US', city: 'Austin' },
      },
    });
    expect(response.body.data.company).toMatchObject({
      name: 'Initech',
      website: `https://www.${domain}/about`,
      linkedin_url: 'https://linkedin.com/company/initech',
      industry: 'Software',
      size: '51-200',
      description: 'TPS reports',
      status: 'not_analyzed',
    });
    expect((await outboxSince(t.ctx.db, tenant.workspaceId, since)).map((event) => event.topic)).toEqual(['lead.created']);
    const sameSite = await post(tenant, { name: 'Samir', email: `samir@${domain}`, enrich: false });
    expect(sameSite.body.data.company.id).toBe(response.body.data.company.id);
  });

  it('targets a company by id, fills its empty fields, and resolves by exact name', async () => {
    const company = await insertCompany(t.ctx.db, { workspace_id: tenant.workspaceId, name: unique('Umbrella'), domain: null, status: 'not_analyzed', links: [] });
    const byId = await post(tenant, { name: 'Alice', email: `${unique()}@gmail.com`, company: { id: company.id, industry: 'Pharma' } });
    expect(byId.body.data.company).toMatchObject({ id: company.id, name: company.name, industry: 'Pharma' });
    const byName = await post(tenant, { name: 'Bob', email: `${unique()}@gmail.com`, company: { name: company.name!.toUpperCase(), industry: 'Ignored' } });
    expect(byName.body.data.company).toMatchObject({ id: company.id, industry: 'Pharma' });
  });

  it('creates one company for parallel leads of a new email domain', async () => {
    const domain = `${unique('parallel')}.com`;
    const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => post(tenant, { name: `P${i}`, email: `p${i}@${domain}` })));
    expect(responses.every((response) => response.status === 201)).toBe(true);
    expect(new Set(responses.map((response) => response.body.data.company.id)).size).toBe(1);
  });
});
