import { beforeAll, describe, expect, it } from '@jest/globals';
import type { CompanyInput, LeadFields, LeadInput } from '../../generated/api.js';
import { COMPANY_FIELD_TARGETS, LEAD_FIELD_TARGETS, prepareLead } from '../../src/leads/intake/prepare.js';
import { insertTag } from '../../src/tags/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';

// One sample value per input field, typed from the generated schemas: a field added to the
// contract fails the typecheck here too, until it has a sample and so a test.
const LEAD_SAMPLE: { [Field in keyof LeadFields]-?: NonNullable<LeadFields[Field]> } = {
  name: 'Sample Person',
  email: 'sample.person@sample-corp.example',
  phone: '+1 (303) 555-0142',
  linkedin_url: 'https://www.linkedin.com/in/sample-person',
  emails: ['other.address@sample-corp.example'],
  phones: ['+44 20 7946 0018'],
  links: [{ type: 'github', url: 'https://github.com/sample-person' }],
  job_title: 'Head of Samples',
  description: 'Met at the sample fair.',
  gender: 'non-binary',
  language: 'pt',
  decision_maker: true,
  custom_fields: { 'Lead Source': 'fair', Score: 7, VIP: true },
  location: { country: 'PT', state: 'Lisboa', city: 'Lisbon', address: 'Rua 1', zip_code: '1000-001' },
  tags: ['Sampled'],
  tag_ids: [1],
  company: { name: 'Sample Corp' },
};

const COMPANY_SAMPLE: { [Field in keyof CompanyInput]-?: NonNullable<CompanyInput[Field]> } = {
  id: 5,
  name: 'Sample Corp',
  website: 'https://www.sample-corp.example/about',
  linkedin_url: 'https://www.linkedin.com/company/sample-corp',
  industry: 'Samples',
  size: '11-50',
  description: 'Makes samples.',
  emails: ['hello@sample-corp.example'],
  phones: ['+1 303 555 0199'],
  location: { country: 'US', city: 'Denver' },
};

const changed = (before: object | null, after: object | null, keys: readonly string[]) =>
  keys.filter((key) => JSON.stringify((before as Record<string, unknown> | null)?.[key]) !== JSON.stringify((after as Record<string, unknown> | null)?.[key]));

describe('every input field reaches the prepared lead where the field table says', () => {
  const base: LeadInput = { name: 'Base Person', linkedin_url: 'https://www.linkedin.com/in/base-person' };

  it.each(Object.entries(LEAD_FIELD_TARGETS))('lead field %s', (field, targets) => {
    const payload = { ...base, [field]: LEAD_SAMPLE[field as keyof LeadFields] } as LeadInput;
    expect(changed(prepareLead(base), prepareLead(payload), targets)).toEqual(targets);
  });

  it.each(Object.entries(COMPANY_FIELD_TARGETS))('company field %s', (field, targets) => {
    const withCompany = (company: CompanyInput): LeadInput => ({ ...base, company: { name: 'Base Corp', ...company } });
    const before = prepareLead(withCompany({})).company;
    const after = prepareLead(withCompany({ [field]: COMPANY_SAMPLE[field as keyof CompanyInput] })).company;
    expect(changed(before, after, targets)).toEqual(targets);
  });
});

describe('POST /leads and a batch row treat every field the same way', () => {
  const bed = testBed();
  let t: TestApp;
  let tenant: Tenant;
  beforeAll(() => {
    ({
      t,
      tenants: [tenant],
    } = bed);
  });

  it('stores the same lead from the same fields', async () => {
    const tag = await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name: 'Existing', color: null, active: true });
    // Everything but the identities is shared; company.id is left out so both resolve the same company.
    const fields = (n: number): LeadFields =>
      ({
        ...LEAD_SAMPLE,
        email: `person${n}@sample-corp.example`,
        emails: [`second${n}@sample-corp.example`],
        phone: `+1 303 555 010${n}`,
        phones: [`+44 20 7946 001${n}`],
        linkedin_url: `https://www.linkedin.com/in/sample-${n}`,
        tag_ids: [tag.id],
        company: { ...COMPANY_SAMPLE, id: undefined },
      }) as LeadFields;
    const single = await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ ...fields(1), enrich: false });
    expect(single.status).toBe(201);
    const batch = await t.http
      .post('/api/v1/leads/batch')
      .set(tenant.auth)
      .send({ leads: [fields(2)], enrich: false });
    expect(batch.body.data[0]).toMatchObject({ status: 'created' });
    const read = async (id: number) => (await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth)).body.data;
    const comparable = (lead: Record<string, unknown>) =>
      JSON.parse(
        JSON.stringify(lead, (key, value) =>
          ['id', 'created_at', 'updated_at', 'emails', 'phones'].includes(key) ? undefined : typeof value === 'string' ? value.replace(/sample-[12]$/, 'sample-n') : value,
        ),
      );
    const [fromSingle, fromBatch] = [await read(single.body.data.id), await read(batch.body.data[0].lead_id)];
    expect(comparable(fromBatch)).toEqual(comparable(fromSingle));
    expect(fromSingle.custom_fields).toEqual({ lead_source: 'fair', score: '7', vip: 'yes' });
    expect(fromSingle.tags.map((t: { name: string }) => t.name).sort()).toEqual(['Existing', 'Sampled']);
  });
});
