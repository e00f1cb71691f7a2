import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';
import { lastOutboxId, outboxSince, postLead, rowCount, uniqueName } from '../support/requests.js';
import { sql } from 'kysely';

// Deduplication's match order (email, then LinkedIn handle, then phone), its workspace scope,
// the phone key (all digits when 7 to 9, else the last 10; under 7 never stored nor matched)
// and its behaviour under parallel requests.

const bed = testBed({ tenants: [{}, { name: 'Elsewhere' }], app: { env: { RATE_LIMIT_PER_MINUTE: '100000' } } });
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
const linkedin = () => `https://www.linkedin.com/in/${unique('dedup-')}`;
const phone = () => `+1 720 555 ${1000 + ++sequence}`;
const post = (body: object, who: Tenant = tenant) => postLead(t, who, { enrich: false, ...body });
const created = async (body: object, who: Tenant = tenant): Promise<number> => {
  const response = await post(body, who);
  expect(response.status).toBe(201);
  return response.body.data.id as number;
};

describe('match order', () => {
  it('matches the LinkedIn handle before a phone of another lead, and says so', async () => {
    const number = phone();
    const byPhone = await created({ name: 'By phone', phone: number });
    const url = linkedin();
    const byLinkedin = await created({ name: 'By LinkedIn', linkedin_url: url });
    const response = await post({ name: 'Both', linkedin_url: url, phone: number });
    expect({ status: response.status, id: response.body.data.id, matched_on: response.body.meta.matched_on }).toEqual({ status: 200, id: byLinkedin, matched_on: url });
    // The phone belongs to another lead: documented as a warning, the phone is not moved.
    expect(response.body.meta.warnings).toEqual([`phones: ${number.replace(/\D/g, '').slice(-10)} belongs to lead ${byPhone} and was not added to this lead.`]);
  });

  it('matches an email before the LinkedIn handle of another lead, and says so', async () => {
    const url = linkedin();
    const byLinkedin = await created({ name: 'By LinkedIn', linkedin_url: url });
    const email = `${unique('first')}@gmail.com`;
    const byEmail = await created({ name: 'By email', email });
    const response = await post({ name: 'Both', email, linkedin_url: url });
    expect({ status: response.status, id: response.body.data.id, matched_on: response.body.meta.matched_on }).toEqual({ status: 200, id: byEmail, matched_on: email });
    expect(response.body.meta.warnings).toEqual([`linkedin_url: ${url.replace('https://www.linkedin.com/in/', '')} belongs to lead ${byLinkedin} and was not added to this lead.`]);
  });
});

describe('workspace scope', () => {
  it('never matches a LinkedIn handle or a phone of another workspace', async () => {
    const [url, number] = [linkedin(), phone()];
    const mine = [await created({ name: 'Mine', linkedin_url: url }), await created({ name: 'Mine too', phone: number })];
    const theirs = [await created({ name: 'Theirs', linkedin_url: url }, other), await created({ name: 'Theirs too', phone: number }, other)];
    expect(theirs.filter((id) => mine.includes(id))).toEqual([]);
  });
});

describe('the phone key', () => {
  it('compares all digits of a 7- to 9-digit number, the last 10 of a longer one, and never one under 7', async () => {
    const seven = String(5_550_000 + ++sequence);
    const sevenDigits = await created({ name: 'Seven', phone: seven });
    expect((await post({ name: 'Seven again', phone: seven.replace(/^(\d{3})/, '$1-') })).body.data.id).toBe(sevenDigits);
    // Eight digits ending in the same seven: another key, another person.
    expect((await post({ name: 'Eight', phone: `9${seven}` })).status).toBe(201);

    const nine = String(555_000_000 + ++sequence);
    const nineDigits = await created({ name: 'Nine', phone: nine });
    expect((await post({ name: 'Nine again', phone: nine })).body.data.id).toBe(nineDigits);
    // Ten digits ending in the same nine: another key; eleven sharing those ten: the same one.
    const tenDigits = await created({ name: 'Ten', phone: `4${nine}` });
    expect((await post({ name: 'Eleven', phone: `14${nine}` })).body.data.id).toBe(tenDigits);

    const six = String(550_000 + ++sequence);
    const first = await post({ name: 'Six', phone: six, email: `${unique('six')}@gmail.com` });
    expect(first.body.data.phones).toEqual([]);
    expect((await post({ name: 'Six again', phone: six, email: `${unique('six')}@gmail.com` })).status).toBe(201);
  });
});

describe('parallel requests', () => {
  it('turns the same person sent in parallel (email, and phone on some requests) into one lead: one created, the rest updated', async () => {
    const email = `${unique('race')}@gmail.com`;
    const phone = `+1 303 555 ${1000 + ++sequence}`;
    const responses = await Promise.all(Array.from({ length: 8 }, (_, i) => post(i % 2 ? { name: `Racer ${i}`, email } : { name: `Racer ${i}`, email, phone })));
    expect(responses.map((response) => response.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(responses.map((response) => response.body.data.id)).size).toBe(1);
    const leads = await t.ctx.db
      .selectFrom('leads')
      .where('workspace_id', '=', tenant.workspaceId)
      .where(sql<boolean>`${email} = ANY(emails)`)
      .select('id')
      .execute();
    expect(leads).toHaveLength(1);
  });

  it.each([
    ['LinkedIn-only', () => ({ linkedin_url: linkedin() })],
    ['phone-only', () => ({ phone: phone() })],
  ])('turn a %s person sent 8 times at once into one lead: one created, the rest updated', async (_label, contact) => {
    const same = contact();
    const responses = await Promise.all(Array.from({ length: 8 }, (_, n) => post({ name: `Racer ${n}`, ...same })));
    expect(responses.map((response) => response.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(responses.map((response) => response.body.data.id)).size).toBe(1);
  });

  it('creates a new tag sent by parallel requests once, and attaches it to every lead', async () => {
    const tag = unique('Parallel Tag ');
    const responses = await Promise.all(Array.from({ length: 6 }, (_, n) => post({ name: `Tagged ${n}`, email: `${unique('tagged')}@gmail.com`, tags: [tag] })));
    expect(responses.map((response) => response.status)).toEqual([201, 201, 201, 201, 201, 201]);
    const tags = await t.ctx.db.selectFrom('tags').where('workspace_id', '=', tenant.workspaceId).where('name', '=', tag).select('id').execute();
    expect(tags).toHaveLength(1);
    expect(responses.map((response) => response.body.data.tags.map((attached: { id: number }) => attached.id))).toEqual(responses.map(() => [tags[0]!.id]));
  });
});

describe('matching on POST /leads, and on_duplicate', () => {
  it('matches on email case-insensitively and merges under the default update', async () => {
    const email = `${unique('dup')}@gmail.com`;
    const first = await post({ name: 'Original', email, job_title: 'Engineer', phone: '+1 415 555 0101', custom_fields: { Plan: 'free' } });
    const second = await post({ name: 'Renamed', email: email.toUpperCase(), emails: [`${unique()}@gmail.com`], custom_fields: { Seats: 3 }, location: { city: 'Oslo' } });
    expect(second.status).toBe(200);
    expect(second.body.meta).toEqual({ status: 'updated', dry_run: false, matched_on: email, match_kind: 'email', conflicts: [], warnings: [] });
    expect(second.body.data).toMatchObject({
      id: first.body.data.id,
      name: 'Renamed',
      job_title: 'Engineer',
      phones: ['14155550101'],
      custom_fields: { plan: 'free', seats: '3' },
    });
    expect(second.body.data.emails).toHaveLength(2);
    expect(second.body.data.location.city).toBe('Oslo');
  });

  it("matches on any of the person's extra emails, never on company emails", async () => {
    const extra = `${unique('extra')}@gmail.com`;
    const first = await post({ name: 'Multi', email: `${unique()}@gmail.com`, emails: [extra] });
    const viaExtra = await post({ name: 'Multi', emails: [extra] });
    expect(viaExtra.body.data.id).toBe(first.body.data.id);
    const companyOnly = await post({ name: 'Other person', phone: `+1 212 555 ${1000 + ++sequence}`, company: { name: 'Somewhere', emails: [extra] } });
    expect(companyOnly.status).toBe(201);
  });

  it('matches LinkedIn profile URLs across scheme, www, case, trailing slash, query and fragment', async () => {
    const handle = unique('Jane-Doe-');
    const first = await post({ name: 'Jane', linkedin_url: `https://www.linkedin.com/in/${handle}` });
    for (const variant of [
      `http://linkedin.com/in/${handle.toLowerCase()}/`,
      `https://linkedin.com/in/${handle.toUpperCase()}?trk=public`,
      `https://de.linkedin.com/in/${handle}#about`,
    ]) {
      const response = await post({ name: 'Jane again', linkedin_url: variant });
      expect({ variant, status: response.status, id: response.body.data.id }).toEqual({ variant, status: 200, id: first.body.data.id });
    }
  });

  it('matches phones with or without country code and trunk prefix', async () => {
    // London: +44 20 then 8 digits; nationally 020 then the same 8 digits.
    const subscriber = String(79460000 + ++sequence);
    const first = await post({ name: 'Phone', phone: `+44 20 ${subscriber}` });
    for (const variant of [`020 ${subscriber}`, `0044 (0)20 ${subscriber}`, `+44 (0) 20 ${subscriber.slice(0, 4)} ${subscriber.slice(4)}`]) {
      const response = await post({ name: 'Phone again', phone: variant });
      expect({ variant, status: response.status, id: response.body.data.id }).toEqual({ variant, status: 200, id: first.body.data.id });
    }
  });

  it('never matches on name, and never across workspaces', async () => {
    const name = unique('Same Name ');
    const first = await post({ name, email: `${unique()}@gmail.com` });
    const second = await post({ name, email: `${unique()}@gmail.com` });
    expect(second.status).toBe(201);
    expect(second.body.data.id).not.toBe(first.body.data.id);
    const email = `${unique('iso')}@gmail.com`;
    await post({ name: 'Mine', email });
    const theirs = await post({ name: 'Theirs', email }, other);
    expect(theirs.status).toBe(201);
  });

  it('skip leaves the lead untouched and attaches no tag', async () => {
    const email = `${unique('skip')}@gmail.com`;
    const first = await post({ name: 'Keep me', email, job_title: 'Before' });
    const since = await lastOutboxId(t.ctx.db);
    const skipped = await post({ name: 'Changed', email, job_title: 'After', tags: [unique('skiptag')], on_duplicate: 'skip' });
    expect(skipped.status).toBe(200);
    expect(skipped.body.meta).toMatchObject({ status: 'skipped', matched_on: email });
    expect(skipped.body.data).toMatchObject({ id: first.body.data.id, name: 'Keep me', job_title: 'Before', tags: [] });
    expect(await outboxSince(t.ctx.db, tenant.workspaceId, since)).toEqual([]);
  });

  it('error answers 409 duplicate_lead with matched_on and lead_id, and changes nothing', async () => {
    const handle = unique('err');
    const first = await post({ name: 'Exists', linkedin_url: `https://linkedin.com/in/${handle}` });
    const tagsBefore = await rowCount(t.ctx.db, 'tags', tenant.workspaceId);
    const response = await post({ name: 'Dup', linkedin_url: `https://www.linkedin.com/in/${handle}/`, tags: [unique('never')], on_duplicate: 'error' });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      error: 'duplicate_lead',
      message: expect.any(String),
      matched_on: expect.stringContaining(handle),
      match_kind: 'linkedin',
      conflicts: [],
      lead_id: first.body.data.id,
    });
    expect(await rowCount(t.ctx.db, 'tags', tenant.workspaceId)).toBe(tagsBefore);
    expect((await t.http.get(`/api/v1/leads/${first.body.data.id}`).set(tenant.auth)).body.data.name).toBe('Exists');
  });

  it('prefers the email match over LinkedIn and phone matches of other leads', async () => {
    const byPhone = await post({ name: 'By phone', phone: `+1 646 555 ${1000 + ++sequence}` });
    const email = `${unique('strong')}@gmail.com`;
    const byEmail = await post({ name: 'By email', email });
    const response = await post({ name: 'Both', email, phone: byPhone.body.data.phones[0] });
    expect(response.body.data.id).toBe(byEmail.body.data.id);
    expect(response.body.meta.matched_on).toBe(email);
    expect(response.body.meta.warnings).toEqual([expect.stringContaining(`lead ${byPhone.body.data.id}`)]);
  });
});
