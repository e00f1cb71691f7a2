import { beforeAll, describe, expect, it } from '@jest/globals';
import { insertTag } from '../../src/tags/repository.js';
import type { TestApp } from '../support/app.js';
import { testBed } from '../support/test-bed.js';
import { createTenant, type Tenant } from '../support/fixtures.js';
import { API_TIMESTAMP } from '../support/timestamps.js';

const bed = testBed({ tenants: [{}, { name: 'Other workspace' }] });
let t: TestApp;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  ({
    t,
    tenants: [tenant, other],
  } = bed);
  for (const [name, color, active] of [
    ['vip', '#ff0000', true],
    ['Alpha', null, true],
    ['zeta', '#00ff00', true],
    ['Beta (old)', null, false],
  ] as const) {
    await insertTag(t.ctx.db, { workspace_id: tenant.workspaceId, name, color, active });
  }
  await insertTag(t.ctx.db, { workspace_id: other.workspaceId, name: 'foreign', color: null, active: true });
});

describe('GET /tags', () => {
  it("lists active tags ordered by name, without other workspaces' tags", async () => {
    const response = await t.http.get('/api/v1/tags').set(tenant.auth);
    expect(response.status).toBe(200);
    expect(response.body.data.map((tag: { name: string }) => tag.name)).toEqual(['Alpha', 'vip', 'zeta']);
    expect(response.body.data[1]).toEqual({ id: expect.any(Number), name: 'vip', color: '#ff0000', active: true });
    expect(response.body.data[0].color).toBeNull();
  });

  it('orders names that differ in case alphabetically, not by character code: apple, Banana, cherry', async () => {
    const cased = await createTenant(t.ctx.db, { name: 'Cased tags' });
    for (const name of ['cherry', 'Banana', 'apple']) await insertTag(t.ctx.db, { workspace_id: cased.workspaceId, name, color: null, active: true });
    const response = await t.http.get('/api/v1/tags').set(cased.auth);
    expect(response.body.data.map((tag: { name: string }) => tag.name)).toEqual(['apple', 'Banana', 'cherry']);
  });

  it('includes archived tags only when asked', async () => {
    const response = await t.http.get('/api/v1/tags?include_archived=true').set(tenant.auth);
    expect(response.body.data.map((tag: { name: string }) => tag.name)).toEqual(['Alpha', 'Beta (old)', 'vip', 'zeta']);
    expect(response.body.data[1].active).toBe(false);
    const explicitFalse = await t.http.get('/api/v1/tags?include_archived=false').set(tenant.auth);
    expect(explicitFalse.body.data).toHaveLength(3);
  });

  it('rejects a non-boolean include_archived with a 422', async () => {
    const response = await t.http.get('/api/v1/tags?include_archived=maybe').set(tenant.auth);
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toEqual(['include_archived']);
  });
});

describe('GET /leads/{id}', () => {
  let leadId: number;
  beforeAll(async () => {
    const created = await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({
        name: 'Jane Doe',
        email: 'Jane@Acme-Robotics.com',
        phone: '+1 (415) 555-0100',
        job_title: 'CTO',
        tags: ['vip'],
        company: { name: 'Acme Robotics', website: 'https://acme-robotics.com' },
        enrich: false,
        location: { country: 'US', city: 'San Francisco' },
      });
    expect(created.status).toBe(201);
    leadId = created.body.data.id;
  });

  it('returns the lead with all relations loaded and API timestamps', async () => {
    const response = await t.http.get(`/api/v1/leads/${leadId}`).set(tenant.auth);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['data']);
    const lead = response.body.data;
    expect(lead).toMatchObject({
      id: leadId,
      name: 'Jane Doe',
      job_title: 'CTO',
      stage: 'new',
      source: 'api',
      decision_maker: false,
      emails: ['jane@acme-robotics.com'],
      phones: ['14155550100'],
      location: { country: 'US', state: null, city: 'San Francisco', address: null, zip_code: null },
      company: { name: 'Acme Robotics', website: 'https://acme-robotics.com', status: 'not_analyzed', tags: [] },
    });
    expect(lead.tags.map((tag: { name: string }) => tag.name)).toEqual(['vip']);
    expect(lead.created_at).toMatch(API_TIMESTAMP);
    expect(lead.updated_at).toMatch(API_TIMESTAMP);
    expect(lead.company.created_at).toMatch(API_TIMESTAMP);
  });

  it("gives a missing lead and another workspace's lead the identical 404 body", async () => {
    const foreign = await t.http.get(`/api/v1/leads/${leadId}`).set(other.auth);
    const missing = await t.http.get('/api/v1/leads/999999999').set(other.auth);
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect(foreign.body.error).toBe('not_found');
  });

  it('treats a non-numeric id as an unmatched route: 404 without error', async () => {
    for (const path of ['/api/v1/leads/abc', '/api/v1/leads/12abc', '/api/v1/leads/-1']) {
      const response = await t.http.get(path).set(tenant.auth);
      expect(response.status).toBe(404);
      expect(response.body.error).toBeUndefined();
      expect(typeof response.body.message).toBe('string');
    }
  });

  it('answers numeric ids that no lead can have with not_found', async () => {
    for (const id of ['0', '99999999999999999999']) {
      const response = await t.http.get(`/api/v1/leads/${id}`).set(tenant.auth);
      expect(response.status).toBe(404);
      expect(response.body.error).toBe('not_found');
    }
  });
});
