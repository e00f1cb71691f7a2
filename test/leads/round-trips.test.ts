import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { statementsOf } from '../support/statements.js';
import { testBed } from '../support/test-bed.js';
import type { Tenant } from '../support/fixtures.js';

// Database round trips are the main cost of a write (see bench/README.md): these pin how many
// statements the hot paths send, so a change that adds one per request shows up here.

const bed = testBed();
let t: TestApp;
let tenant: Tenant;
beforeAll(async () => {
  ({
    t,
    tenants: [tenant],
  } = bed);
  await t.http.get('/api/v1/me').set(tenant.auth); // the key is cached and its last use written
});

const countStatements = <T>(work: () => Promise<T>) => statementsOf(t.ctx.pool, work);

/** What a statement is, for reading a request's round trips at a glance. */
function kindOf(statement: string): string {
  if (/^\s*(begin|commit|savepoint|release)/i.test(statement)) return statement.trim().split(/\s/)[0]!.toLowerCase();
  if (/INSERT INTO leads/.test(statement)) return 'new leads';
  if (/INSERT INTO lead_daily_counts/.test(statement)) return 'intake counts';
  if (/FROM lead_identities/.test(statement) && /^\s*SELECT/.test(statement)) return 'lookup';
  return statement.trim().slice(0, 40);
}

describe('database round trips', () => {
  it("POST /leads for a new person, alone: one lookup, then one write that returns the lead and adds the day's intake counts, committing on its own", async () => {
    const person = (n: number) => ({
      name: `Round ${n}`,
      email: `round${n}@roundco.example`,
      phone: `+1 303 555 ${1000 + n}`,
      linkedin_url: `https://www.linkedin.com/in/round-${n}`,
      tags: ['round', 'trip'],
    });
    await t.http.post('/api/v1/leads').set(tenant.auth).send(person(0)); // creates the company and the tags
    const { result, statements } = await countStatements(() => t.http.post('/api/v1/leads').set(tenant.auth).send(person(1)));
    expect(result.status).toBe(201);
    expect(result.body.data).toMatchObject({ name: 'Round 1', tags: [expect.objectContaining({ name: 'round' }), expect.objectContaining({ name: 'trip' })] });
    expect(statements.map(kindOf)).toEqual(['lookup', 'new leads']);
    expect(statements[1]).toMatch(/INSERT INTO lead_daily_counts/);
  });

  it('POST /leads for an existing person, alone: the lookup, then the update in a transaction that does not read it again', async () => {
    const { result, statements } = await countStatements(() =>
      t.http
        .post('/api/v1/leads')
        .set(tenant.auth)
        .send({ name: 'Round 1 again', email: 'round1@roundco.example', tags: ['round'] }),
    );
    expect(result.status).toBe(200);
    expect(result.body.meta.status).toBe('updated');
    expect(statements.slice(0, 2).map(kindOf)).toEqual(['lookup', 'begin']);
    expect(statements.at(-1)).toMatch(/^commit$/i);
    expect(statements.filter((statement) => /^begin|^commit/i.test(statement))).toHaveLength(2);
    expect(statements.filter((statement) => kindOf(statement) === 'lookup')).toHaveLength(1);
  });

  it('GET /me with a cached key: none', async () => {
    const { result, statements } = await countStatements(() => t.http.get('/api/v1/me').set(tenant.auth));
    expect(result.status).toBe(200);
    expect(statements).toHaveLength(0);
  });

  it('GET /leads/{id}: one', async () => {
    const created = await t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Read me', email: 'read@roundco.example' });
    const { result, statements } = await countStatements(() => t.http.get(`/api/v1/leads/${created.body.data.id}`).set(tenant.auth));
    expect(result.status).toBe(200);
    expect(statements).toHaveLength(1);
  });

  it("runs the service's statements without JIT (it compiles for tens of milliseconds a set statement the planner overestimates)", async () => {
    const { rows } = await t.ctx.pool.query<{ jit: string }>('SHOW jit');
    expect(rows[0]!.jit).toBe('off');
  });
});
