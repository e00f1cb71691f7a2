import { beforeAll, describe, expect, it } from '@jest/globals';
import type { TestApp } from '../support/app.js';
import type { Tenant } from '../support/fixtures.js';
import { statementsOf } from '../support/statements.js';
import { testBed } from '../support/test-bed.js';

// GET /leads/{id} reads that arrive within one turn of the event loop share one statement per
// workspace; each still gets exactly its own answer, and a foreign id reads as missing.

const bed = testBed({ tenants: [{}, { name: 'Other Co' }] });
let t: TestApp;
let alice: Tenant;
let bob: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [alice, bob],
  } = bed);
});

const create = async (tenant: Tenant, n: number) =>
  (
    await t.http
      .post('/api/v1/leads')
      .set(tenant.auth)
      .send({ name: `Reader ${n}`, email: `reader${n}.${tenant.workspaceId}@readco.example` })
  ).body.data;

describe('concurrent GET /leads/{id}', () => {
  it('share one statement per workspace, each answered with its own lead, foreign ids as missing', async () => {
    const own = [await create(alice, 1), await create(alice, 2), await create(alice, 3)];
    const foreign = await create(bob, 4);
    const { result, statements } = await statementsOf(t.ctx.pool, () =>
      Promise.all([
        ...own.map((lead) => t.ctx.leadReads.getLead(alice.workspaceId, lead.id)),
        t.ctx.leadReads.getLead(alice.workspaceId, foreign.id),
        t.ctx.leadReads.getLead(bob.workspaceId, foreign.id),
      ]),
    );
    expect(result).toEqual([...own, null, foreign]);
    expect(statements).toHaveLength(2);
  });

  it('answer each caller over HTTP exactly as a read of its own', async () => {
    const own = await create(alice, 5);
    const foreign = await create(bob, 6);
    const base = await t.listen();
    const get = (tenant: Tenant, id: number) =>
      fetch(`${base}/api/v1/leads/${id}`, { headers: tenant.auth }).then(async (response) => ({ status: response.status, body: await response.json() }));
    const answers = await Promise.all([get(alice, own.id), get(alice, foreign.id), get(bob, foreign.id), get(bob, own.id), get(alice, own.id)]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 200, 404, 200]);
    expect(answers[0]!.body).toEqual({ data: own });
    expect(answers[2]!.body).toEqual({ data: foreign });
    expect(answers[1]!.body).toEqual(answers[3]!.body);
    expect(answers[1]!.body).toMatchObject({ error: 'not_found' });
  });
});
