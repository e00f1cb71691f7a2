import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import { readTestEnvironment } from '../support/env.js';
import { statementsOf, statementsSentBy } from '../support/statements.js';
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
  if (/nextval\(pg_get_serial_sequence\('leads'/.test(statement)) return 'lead ids';
  if (/INSERT INTO lead_identities/.test(statement)) return 'match keys';
  if (/INSERT INTO lead_tags/.test(statement)) return 'tags';
  if (/insert into "outbox"/i.test(statement)) return 'events';
  if (/FROM leads AS l\s+LEFT JOIN companies/.test(statement)) return 'lead record';
  if (/INSERT INTO lead_daily_counts/.test(statement)) return 'intake counts';
  if (/FROM lead_identities/.test(statement) && /^\s*SELECT/.test(statement)) return 'lookup';
  if (/^\s*SELECT delegated_workspace_steps_/.test(statement)) return "the workspace's node";
  return statement.trim().slice(0, 40);
}

const CITUS = readTestEnvironment().citus;

const person = (n: number) => ({
  name: `Round ${n}`,
  email: `round${n}@roundco.example`,
  phone: `+1 303 555 ${1000 + n}`,
  linkedin_url: `https://www.linkedin.com/in/round-${n}`,
  tags: ['round', 'trip'],
});

describe('database round trips', () => {
  it("POST /leads for a new person, alone: one lookup, then one write that returns the lead and adds the day's intake counts, committing on its own", async () => {
    await t.http.post('/api/v1/leads').set(tenant.auth).send(person(0)); // creates the company and the tags
    await t.http.post('/api/v1/leads').set(tenant.auth).send(person(99)); // on Citus, makes the function of the workspace's writes
    const { result, statements } = await countStatements(() => t.http.post('/api/v1/leads').set(tenant.auth).send(person(1)));
    expect(result.status).toBe(201);
    expect(result.body.data).toMatchObject({ name: 'Round 1', tags: [expect.objectContaining({ name: 'round' }), expect.objectContaining({ name: 'trip' })] });
    if (CITUS) {
      // The Citus executor: the ids from the coordinator, then the writes and the record in one call to the workspace's node.
      expect(statements.map(kindOf)).toEqual(['lookup', 'lead ids', "the workspace's node"]);
      return;
    }
    expect(statements.map(kindOf)).toEqual(['lookup', 'new leads']);
    expect(statements[1]).toMatch(/INSERT INTO lead_daily_counts/);
  });

  (CITUS ? it : it.skip)('on Citus, POST /leads for a new person: the coordinator plans each statement as one task, none in steps (subplans) of their own', async () => {
    const { result, sent } = await statementsSentBy(t.ctx.pool, () => t.http.post('/api/v1/leads').set(tenant.auth).send(person(2)));
    expect(result.status).toBe(201);
    const planned = sent.filter(({ text }) => !/^\s*(begin|commit)/i.test(text));
    const plans: string[] = [];
    for (const { text, values } of planned) {
      const { rows } = await t.ctx.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
      plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
    }
    const distributed = plans.filter((plan) => /Citus/.test(plan));
    expect(distributed.length).toBeGreaterThan(0);
    expect(distributed.filter((plan) => /Distributed Subplan|Task Count: (?!1\b)/.test(plan))).toEqual([]);
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

  (CITUS ? it : it.skip)(
    'on Citus, POST /leads for an existing person with keys the lead holds and no tag to attach: no key claimed again, the record returned by the update',
    async () => {
      const { result, statements } = await countStatements(() =>
        t.http.post('/api/v1/leads').set(tenant.auth).send({ name: 'Round 1 once more', email: 'round1@roundco.example', linkedin_url: 'https://www.linkedin.com/in/round-1' }),
      );
      expect(result.status).toBe(200);
      expect(result.body.data).toMatchObject({ name: 'Round 1 once more' });
      expect(statements.map(kindOf)).not.toContain('match keys');
      // Without tags to attach, the update returns the record: it is not read again.
      expect(statements.map(kindOf)).not.toContain('lead record');
    },
  );

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
