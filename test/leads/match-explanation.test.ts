import { beforeAll, describe, expect, it } from '@jest/globals';
import type { BatchRowResult, LeadWriteMeta, MatchConflict } from '../../generated/api.js';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { testBed } from '../support/test-bed.js';

// What an integrator reads when a payload's identifiers point at more than one existing lead:
// the lead acted on (matched_on, match_kind) and every other one (conflicts), the same in a
// single call's meta, a batch row, a dry run and the 409 duplicate_lead body; and nothing of
// the sort for a new person. Every answer is also checked against the document by the test app.

const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '100000' } } });
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

let sequence = 0;
const unique = (prefix: string) => `${prefix}${++sequence}`;
const post = (body: object) =>
  t.http
    .post('/api/v1/leads')
    .set(tenant.auth)
    .send({ enrich: false, ...body });
const batch = (body: object) =>
  t.http
    .post('/api/v1/leads/batch')
    .set(tenant.auth)
    .send({ enrich: false, ...body });
const created = async (body: object): Promise<number> => {
  const response = await post(body);
  expect(response.status).toBe(201);
  return response.body.data.id as number;
};
const readLead = async (id: number) => (await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth)).body.data;

/**
 * Three existing leads, one per kind of identifier, and a payload carrying all three
 * identifiers: its email decides (A); the LinkedIn lead (C) and the phone lead (B) conflict.
 */
async function threeLeads() {
  const email = `${unique('person')}@gmail.com`;
  const url = `https://www.linkedin.com/in/${unique('Explained-')}/`;
  const phone = `+1 303 555 ${1000 + ++sequence}`;
  const a = await created({ name: 'A by email', email });
  const b = await created({ name: 'B by phone', phone });
  const c = await created({ name: 'C by LinkedIn', linkedin_url: url });
  const conflicts: MatchConflict[] = [
    { lead_id: c, matched_on: url, kind: 'linkedin' },
    { lead_id: b, matched_on: phone.replace(/\D/g, ''), kind: 'phone' },
  ];
  return { a, b, c, email, url, phone, conflicts, payload: { name: 'All three', email, linkedin_url: url, phone } };
}

describe('a request matching several leads', () => {
  it("POST /leads acts on the email's lead and lists the LinkedIn and phone leads as conflicts, warnings as before", async () => {
    const { a, b, c, email, url, phone, conflicts, payload } = await threeLeads();
    const response = await post(payload);
    expect(response.status).toBe(200);
    expect(response.body.data.id).toBe(a);
    expect(response.body.meta).toEqual({
      status: 'updated',
      dry_run: false,
      matched_on: email,
      match_kind: 'email',
      conflicts,
      warnings: [
        `linkedin_url: ${url.slice('https://www.linkedin.com/in/'.length, -1).toLowerCase()} belongs to lead ${c} and was not added to this lead.`,
        `phones: ${phone.replace(/\D/g, '').slice(-10)} belongs to lead ${b} and was not added to this lead.`,
      ],
    } satisfies LeadWriteMeta);

    const skipped = await post({ ...payload, on_duplicate: 'skip' });
    expect(skipped.body.meta).toEqual({ status: 'skipped', dry_run: false, matched_on: email, match_kind: 'email', conflicts, warnings: [] });
  });

  it("a dry run reports the same lead and conflicts, with the existing leads' ids, and changes nothing", async () => {
    const { a, b, email, conflicts, payload } = await threeLeads();
    const before = await readLead(b);
    const response = await post({ ...payload, dry_run: true });
    expect(response.status).toBe(200);
    expect(response.body.data.id).toBe(a);
    expect(response.body.meta).toMatchObject({ status: 'updated', dry_run: true, matched_on: email, match_kind: 'email', conflicts });
    expect(await readLead(b)).toEqual(before);
  });

  it('409 duplicate_lead names the matched lead, its kind and the conflicts', async () => {
    const { a, email, conflicts, payload } = await threeLeads();
    const response = await post({ ...payload, on_duplicate: 'error' });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({ error: 'duplicate_lead', message: expect.stringContaining(email), matched_on: email, match_kind: 'email', conflicts, lead_id: a });
    // A dry run refuses the same way.
    const preview = await post({ ...payload, on_duplicate: 'error', dry_run: true });
    expect({ status: preview.status, body: preview.body }).toEqual({ status: 409, body: response.body });
  });

  it('each batch row reports them: updated, skipped, in a dry run, and a duplicate failure', async () => {
    const { a, email, conflicts, payload } = await threeLeads();
    const explained = { matched_on: email, match_kind: 'email', conflicts };
    const rows = async (switches: object) => {
      const response = await batch({ leads: [payload], ...switches });
      expect(response.status).toBe(200);
      return response.body.data as BatchRowResult[];
    };
    expect(await rows({})).toEqual([{ index: 0, status: 'updated', lead_id: a, ...explained, warnings: expect.any(Array) }]);
    expect(await rows({ on_duplicate: 'skip' })).toEqual([{ index: 0, status: 'skipped', lead_id: a, ...explained, warnings: [] }]);
    expect(await rows({ dry_run: true })).toEqual([{ index: 0, status: 'updated', lead_id: null, ...explained, warnings: expect.any(Array) }]);
    expect(await rows({ on_duplicate: 'error' })).toEqual([{ index: 0, status: 'failed', lead_id: a, ...explained, error: expect.stringContaining(email), field: 'email' }]);
    expect(await rows({ on_duplicate: 'error', dry_run: true })).toEqual([
      { index: 0, status: 'failed', lead_id: null, ...explained, error: expect.stringContaining(email), field: 'email' },
    ]);
  });

  it("matched on LinkedIn with another lead's phone: kind linkedin, the phone's lead the conflict", async () => {
    const { b, c, url, phone } = await threeLeads();
    const response = await post({ name: 'LinkedIn and phone', linkedin_url: url, phone, on_duplicate: 'skip' });
    expect(response.body.data.id).toBe(c);
    expect(response.body.meta).toMatchObject({
      status: 'skipped',
      matched_on: url,
      match_kind: 'linkedin',
      conflicts: [{ lead_id: b, matched_on: phone.replace(/\D/g, ''), kind: 'phone' }],
    });
  });

  it('a lead matched by two of its own identifiers is no conflict; a phone alone matches with kind phone', async () => {
    const email = `${unique('both')}@gmail.com`;
    const phone = `+44 20 7946 ${1000 + ++sequence}`;
    const lead = await created({ name: 'Both keys', email, phone });
    const both = await post({ name: 'Both keys again', email, phone: phone.replace('+44 ', '0') });
    expect(both.body.meta).toMatchObject({ status: 'updated', matched_on: email, match_kind: 'email', conflicts: [] });
    const byPhone = await batch({ leads: [{ name: 'By phone', phone }], on_duplicate: 'skip' });
    expect(byPhone.body.data[0]).toMatchObject({ status: 'skipped', lead_id: lead, matched_on: phone.replace(/\D/g, ''), match_kind: 'phone', conflicts: [] });
  });
});

describe('a plain new lead', () => {
  const nothing = { matched_on: null, match_kind: null, conflicts: [] };

  it('reports no match and no conflicts: single, dry run, and a batch (written set-based)', async () => {
    const single = await post({ name: 'New single', email: `${unique('new')}@gmail.com` });
    expect(single.status).toBe(201);
    expect(single.body.meta).toEqual({ status: 'created', dry_run: false, ...nothing, warnings: [] });

    const preview = await post({ name: 'New preview', email: `${unique('new')}@gmail.com`, dry_run: true });
    expect(preview.body.meta).toEqual({ status: 'created', dry_run: true, ...nothing, warnings: [] });

    const leads = [
      { name: 'New row', email: `${unique('new')}@gmail.com` },
      { name: 'New row too', phone: `+1 303 555 ${5000 + ++sequence}` },
    ];
    const rows = await batch({ leads });
    expect(rows.body.data).toEqual([
      { index: 0, status: 'created', lead_id: expect.any(Number), ...nothing, warnings: [] },
      { index: 1, status: 'created', lead_id: expect.any(Number), ...nothing, warnings: [] },
    ]);
    const previewRows = await batch({ leads: [{ name: 'New preview row', email: `${unique('new')}@gmail.com` }], dry_run: true });
    expect(previewRows.body.data).toEqual([{ index: 0, status: 'created', lead_id: null, ...nothing, warnings: [] }]);
  });
});
