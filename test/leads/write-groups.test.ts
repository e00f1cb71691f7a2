import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type pg from 'pg';
import type { Response } from 'supertest';
import type { TestApp } from '../support/app.js';
import { whileAnswersContaining, whileLeadsNamed } from '../support/faults.js';
import { eventually } from '../support/eventually.js';
import { lockedLead as heldLead, lockWaiters, lockWaits, occupyGroups as occupyAllGroups, terminateBackend } from '../support/held-writes.js';
import type { Tenant } from '../support/fixtures.js';
import { parseMetrics } from '../support/metrics.js';
import { testBed } from '../support/test-bed.js';
import { inTransactionRetried } from '../../src/db/conflicts.js';
import { createTenant } from '../support/fixtures.js';
import { lastOutboxId, outboxSince, postLead, sentNow } from '../support/requests.js';
import { readTestEnvironment } from '../support/env.js';
import { lockWaitOf, statementsOf } from '../support/statements.js';

// Group commit: concurrent POST /leads calls of one process run as one group, in one
// transaction. Each test lines a group up for real: as many first requests as groups may run
// at once wait on lead rows the test holds locked (groups of one), the requests under test
// queue behind them, and once they all wait the locks are let go, so they run as the next
// group, whose size is asserted from the process's metrics. Each caller must get exactly the
// answer it would have got alone.

// Each test occupies every working group with dozens of requests of one key: well past the default rate limit over the file.
const bed = testBed({ app: { env: { RATE_LIMIT_PER_MINUTE: '100000' } } });
const CITUS = readTestEnvironment().citus;
let t: TestApp;
let tenant: Tenant;
beforeAll(() => {
  ({
    t,
    tenants: [tenant],
  } = bed);
});

type Body = Record<string, unknown>;
const post = (body: Body, headers: Record<string, string> = {}) => sentNow(postLead(t, tenant, body, headers));

let unique = 0;
const person = (overrides: Body = {}): Body => {
  unique += 1;
  return { name: `Grouped ${unique}`, email: `grouped${unique}@groupco.example`, ...overrides };
};

async function groupSizes(): Promise<{ groups: number; requests: number }> {
  const samples = parseMetrics(await t.ctx.metrics.registry.metrics());
  return { groups: samples.value('lead_intake_write_group_requests_count'), requests: samples.value('lead_intake_write_group_requests_sum') };
}

const lockedLead = () => heldLead(t, tenant);
const occupyGroups = () => occupyAllGroups(t, tenant);

/**
 * Sends `requests` (in this order, each after the one before is queued) while every group
 * the process may run waits on a locked lead, then lets them run: they form one group
 * (`whileRunning` runs beside it), or on Citus one per workspace (`workspaces` of them). Returns their answers.
 */
async function asOneGroup(requests: Array<() => Promise<Response>>, whileRunning?: () => Promise<void>, workspaces = 1): Promise<Response[]> {
  const occupied = await occupyGroups();
  const before = await groupSizes();
  const answers: Array<Promise<Response>> = [];
  try {
    for (const [index, send] of requests.entries()) {
      answers.push(send());
      await eventually(async () => t.ctx.writeGroups.waiting === index + 1, 10_000, 2);
    }
  } finally {
    await occupied.release();
  }
  await occupied.finished();
  await whileRunning?.();
  const settled = await Promise.all(answers);
  const after = await groupSizes();
  expect({ groups: after.groups - before.groups, requests: after.requests - before.requests }).toEqual({ groups: CITUS ? workspaces : 1, requests: requests.length });
  return settled;
}

/**
 * asOneGroup while another writer's transaction is open: `hold` runs that writer's statements,
 * left uncommitted (what it returns comes back beside the answers); once a statement of the
 * group containing `waitsIn` waits on the writer's locks, the writer commits.
 */
async function asOneGroupBesideWriter<Held>(
  hold: (writer: pg.PoolClient) => Promise<Held>,
  waitsIn: string,
  requests: Array<() => Promise<Response>>,
): Promise<{ held: Held; answers: Response[] }> {
  const writer = await t.ctx.pool.connect();
  try {
    await writer.query('BEGIN');
    const held = await hold(writer);
    const answers = await asOneGroup(requests, async () => {
      await lockWaitOf(t.ctx.pool, waitsIn);
      await writer.query('COMMIT');
    });
    return { held, answers };
  } finally {
    await writer.query('ROLLBACK').catch(() => {});
    writer.release();
  }
}

const countLeadsNamed = async (name: string) => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM leads WHERE name = ${name}`.execute(t.ctx.db)).rows[0]!.n);

/**
 * Puts names in place of a workspace's ids, so two workspaces' answers compare: a lead by its
 * first email, a company by its domain (or name), a tag by its name; timestamps dropped.
 */
async function namesOf(workspaceId: number): Promise<(value: unknown) => unknown> {
  const rows = async (table: 'leads' | 'companies' | 'tags', label: string) =>
    new Map(
      (
        await sql<{ id: string; label: string }>`SELECT id::text, ${sql.raw(label)} AS label FROM ${sql.table(table)} WHERE workspace_id = ${workspaceId}`.execute(t.ctx.db)
      ).rows.map((row) => [Number(row.id), row.label]),
    );
  const leads = await rows('leads', 'emails[1]');
  const companies = await rows('companies', 'coalesce(domain, name)');
  const tags = await rows('tags', 'name');
  const name = (value: unknown, key: string | null, holder: Record<string, unknown> | null): unknown => {
    if (Array.isArray(value)) return value.map((item) => name(item, null, null));
    if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      return Object.fromEntries(Object.entries(object).flatMap(([k, v]) => (k === 'created_at' || k === 'updated_at' ? [] : [[k, name(v, k, object)]])));
    }
    if (typeof value === 'string') return value.replace(/lead (\d+)/g, (_, id: string) => `lead ${leads.get(Number(id)) ?? id}`);
    if (typeof value !== 'number' || (key !== 'id' && key !== 'lead_id' && key !== 'tag_id' && key !== 'company_id')) return value;
    if (key === 'lead_id' || (key === 'id' && holder && 'stage' in holder)) return `lead ${leads.get(value)}`;
    if (key === 'tag_id' || (key === 'id' && holder && 'active' in holder)) return `tag ${tags.get(value)}`;
    if (key === 'company_id' || (key === 'id' && holder && 'industry' in holder)) return `company ${companies.get(value)}`;
    return value;
  };
  return (value) => name(value, null, null);
}

describe('a group of concurrent POST /leads calls', () => {
  it('gives each caller its own answer: a 422, a 409 duplicate_lead and a 409 idempotency_key_reuse change nothing for the others', async () => {
    const existing = await post(person());
    const reusedKey = `group-reuse-${Date.now()}`;
    const first = await post(person(), { 'Idempotency-Key': reusedKey });
    expect(first.status).toBe(201);

    const created = [person(), person(), person()];
    const [a, unknownTag, b, duplicate, reuse, c] = await asOneGroup([
      () => post(created[0]!),
      () => post(person({ tag_ids: [987654321] })),
      () => post(created[1]!),
      () => post({ name: 'Dup', email: existing.body.data.emails[0], on_duplicate: 'error' }),
      () => post(person(), { 'Idempotency-Key': reusedKey }),
      () => post(created[2]!),
    ]);
    for (const [answer, sent] of [
      [a, created[0]],
      [b, created[1]],
      [c, created[2]],
    ] as const) {
      expect(answer!.status).toBe(201);
      expect(answer!.body.data).toMatchObject({ name: sent!.name, emails: [sent!.email] });
      expect(answer!.body.meta).toEqual({ status: 'created', dry_run: false, matched_on: null, match_kind: null, conflicts: [], warnings: [] });
    }
    expect(unknownTag!.status).toBe(422);
    expect(unknownTag!.body.errors).toHaveProperty('tag_ids');
    expect(duplicate!.status).toBe(409);
    expect(duplicate!.body).toMatchObject({ error: 'duplicate_lead', lead_id: existing.body.data.id, matched_on: existing.body.data.emails[0] });
    expect(reuse!.status).toBe(409);
    expect(reuse!.body).toMatchObject({ error: 'idempotency_key_reuse' });
    for (const sent of created) expect(await countLeadsNamed(sent.name as string)).toBe(1);
  });

  it('runs the same person sent twice in arrival order: created, then updated', async () => {
    const sent = person({ job_title: 'First' });
    const [first, second] = await asOneGroup([() => post(sent), () => post({ ...sent, job_title: 'Second' })]);
    expect(first!.status).toBe(201);
    expect(first!.body.data.job_title).toBe('First');
    expect(second!.status).toBe(200);
    expect(second!.body.meta).toMatchObject({ status: 'updated', matched_on: sent.email });
    expect(second!.body.data).toMatchObject({ id: first!.body.data.id, job_title: 'Second' });
  });

  it('answers updates of existing people written together exactly as each sent alone: modes, tags, conflicts, a lead updated twice, events', async () => {
    // The same people in two workspaces: the group's, and one that gets the same calls one at a time.
    const alone = await createTenant(t.ctx.db);
    const suffix = ++unique;
    const at = (local: string, domain = 'gmail.com') => `${local}${suffix}@${domain}`;
    const people = [
      { name: 'Ann', email: at('ann', `annco${suffix}.example`), tags: ['Old'], location: { city: 'Paris' }, custom_fields: { a: 1 } },
      { name: 'Ben', email: at('ben'), phone: `+1 415 555 ${String(1000 + suffix).slice(-4)}` },
      { name: 'Cy', email: at('cy'), job_title: 'Chief' },
      { name: 'Di', email: at('di'), tags: ['Old'] },
      { name: 'Ed', email: at('ed'), phone: `+1 416 555 ${String(1000 + suffix).slice(-4)}`, tags: ['Old'] },
    ];
    const [ann, ben, cy, di, ed] = people;
    const calls: Body[] = [
      { name: 'Ann 2', email: ann!.email, tags: ['Old', 'VIP'], job_title: 'CEO', location: { country: 'FR', city: 'Lyon' }, custom_fields: { b: 2 } },
      { name: 'Ben 2', email: ben!.email, emails: [cy!.email], links: [{ type: 'website', url: 'https://ben.example' }] },
      { name: 'Cy skipped', email: cy!.email, on_duplicate: 'skip' },
      { name: 'Di refused', email: di!.email, phone: ben!.phone, on_duplicate: 'error' },
      { name: 'Ed 1', email: ed!.email, tags: ['T1'] },
      { name: 'Ben 3', phone: ben!.phone, email: at('ben3', `annco${suffix}.example`), decision_maker: true },
      { name: 'Ed 2', phone: ed!.phone, tags: ['T2', 'Old'], job_title: 'Second' },
      { name: 'New', email: at('new', `newco${suffix}.example`), tags: ['T1'] },
      { name: 'Di 2', email: di!.email, company: { name: `Di Co ${suffix}` } },
    ];
    const sinceOf = new Map<number, number>();
    const peopleOf = new Map<number, number[]>();
    for (const who of [tenant, alone]) {
      const ids = [];
      for (const person of people) {
        const created = await postLead(t, who, person);
        expect(created.status).toBe(201);
        ids.push(created.body.data.id);
      }
      peopleOf.set(who.workspaceId, ids);
      sinceOf.set(who.workspaceId, await lastOutboxId(t.ctx.db));
    }

    const grouped = await asOneGroup(calls.map((call) => () => post(call)));
    const sequential = [];
    for (const call of calls) sequential.push(await postLead(t, alone, call));

    const [annAnswer, benAnswer, cyAnswer, diAnswer, ed1, ben3, ed2, newAnswer, di2] = grouped;
    expect(grouped.map((answer) => answer.status)).toEqual([200, 200, 200, 409, 200, 200, 200, 201, 200]);
    expect(annAnswer!.body.data).toMatchObject({ name: 'Ann 2', job_title: 'CEO', custom_fields: { a: '1', b: '2' }, location: { city: 'Paris', country: 'FR' } });
    expect(annAnswer!.body.data.tags.map((tag: { name: string }) => tag.name)).toEqual(['Old', 'VIP']);
    expect(annAnswer!.body.data.company).toMatchObject({ name: `annco${suffix}.example` });
    expect(benAnswer!.body.meta).toMatchObject({ status: 'updated', match_kind: 'email', conflicts: [{ lead_id: cyAnswer!.body.data.id, kind: 'email' }] });
    expect(benAnswer!.body.meta.warnings).toEqual([`emails: ${cy!.email} belongs to lead ${cyAnswer!.body.data.id} and was not added to this lead.`]);
    expect(benAnswer!.body.data.emails).toEqual([ben!.email]);
    expect(cyAnswer!.body).toMatchObject({ data: { name: 'Cy', job_title: 'Chief' }, meta: { status: 'skipped' } });
    expect(diAnswer!.body).toMatchObject({ error: 'duplicate_lead', matched_on: di!.email, conflicts: [{ lead_id: benAnswer!.body.data.id, kind: 'phone' }] });
    expect(ed1!.body.data.tags.map((tag: { name: string }) => tag.name)).toEqual(['Old', 'T1']);
    expect(ed2!.body.data).toMatchObject({ id: ed1!.body.data.id, name: 'Ed 2', job_title: 'Second', emails: [ed!.email] });
    expect(ed2!.body.data.tags.map((tag: { name: string }) => tag.name)).toEqual(['Old', 'T1', 'T2']);
    expect(newAnswer!.body.meta.status).toBe('created');
    expect(ben3!.body.data).toMatchObject({ id: benAnswer!.body.data.id, name: 'Ben 3', decision_maker: true, emails: [ben!.email, at('ben3', `annco${suffix}.example`)] });
    expect(di2!.body.data.company).toMatchObject({ name: `Di Co ${suffix}` });

    // Each answer, the leads as they end and the events, as the calls sent one at a time give them.
    const answersOf = async (who: Tenant, answers: Response[]) => {
      const named = await namesOf(who.workspaceId);
      return answers.map((answer) => ({ status: answer.status, body: named(answer.body) }));
    };
    expect(await answersOf(tenant, grouped)).toEqual(await answersOf(alone, sequential));
    const stateOf = async (who: Tenant, answers: Response[]) => {
      const named = await namesOf(who.workspaceId);
      const leads = [];
      for (const id of peopleOf.get(who.workspaceId)!) leads.push(named((await t.http.get(`/api/v1/leads/${id}`).set(who.auth)).body.data));
      // The events of these people and of the lead the calls created (not of the leads that held the groups up).
      const ours = new Set([...peopleOf.get(who.workspaceId)!, ...answers.map((answer) => answer.body.data?.id)]);
      const events = (await outboxSince(t.ctx.db, who.workspaceId, sinceOf.get(who.workspaceId)!))
        .filter((event) => event.topic === 'company.analyze' || ours.has((event.payload as { lead_id: number }).lead_id))
        .map((event) => named(event));
      return { leads, events };
    };
    expect(await stateOf(tenant, grouped)).toEqual(await stateOf(alone, sequential));
  });

  it('runs the same Idempotency-Key once: the other request replays the stored answer', async () => {
    const key = `group-same-${Date.now()}`;
    const sent = person();
    const [first, second] = await asOneGroup([() => post(sent, { 'Idempotency-Key': key }), () => post(sent, { 'Idempotency-Key': key })]);
    expect(first!.status).toBe(201);
    expect(first!.headers['idempotency-replayed']).toBeUndefined();
    expect(second!.status).toBe(201);
    expect(second!.headers['idempotency-replayed']).toBe('true');
    expect(second!.body).toEqual(first!.body);
    expect(await countLeadsNamed(sent.name as string)).toBe(1);
  });

  it('keeps a request whose client went away from harming the others', async () => {
    const gone = person();
    const kept = [person(), person()];
    const [, a, b] = await asOneGroup([
      async () => {
        // Over a real socket, closed once the request waits in the server's queue: the group
        // must go on without its caller.
        const aborting = new AbortController();
        const sent = fetch(`${await t.listen()}/api/v1/leads`, {
          method: 'POST',
          headers: { ...tenant.auth, 'Content-Type': 'application/json' },
          body: JSON.stringify(gone),
          signal: aborting.signal,
        }).catch(() => undefined);
        await eventually(async () => t.ctx.writeGroups.waiting >= 1, 10_000, 2);
        aborting.abort();
        await sent;
        return { status: 0 } as Response;
      },
      () => post(kept[0]!),
      () => post(kept[1]!),
    ]);
    expect([a!.status, b!.status]).toEqual([201, 201]);
    for (const sent of kept) expect(await countLeadsNamed(sent.name as string)).toBe(1);
  });

  it('fails every request of the group with 503 when the database goes away mid-group, and commits nothing', async () => {
    const stuck = await lockedLead();
    const lost = [person(), person()];
    // The group's backend, once it waits on the stuck lead: the server goes away under it.
    const terminateGroup = () =>
      eventually(
        async () => {
          const waiters = await lockWaiters(t.ctx.pool);
          if (waiters.length !== 1) return false;
          await terminateBackend(t.ctx.pool, waiters[0]!);
          return true;
        },
        10_000,
        5,
      );
    let settled: Response[];
    try {
      settled = await asOneGroup(
        [
          () => post(lost[0]!),
          () => post(lost[1]!),
          // Waits on its locked lead inside the group's transaction, after the two new people were written.
          () => post({ name: 'Stuck', email: stuck.email }),
        ],
        terminateGroup,
      );
    } finally {
      await stuck.release();
    }
    for (const answer of settled) {
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBe('5');
    }
    for (const sent of lost) expect(await countLeadsNamed(sent.name as string)).toBe(0);
  });
});

describe('a group of several workspaces', () => {
  it('answers each workspace exactly as its calls sent alone, with the same events; on plain PostgreSQL the new people of every workspace take one lookup and one write, their updates one more', async () => {
    // Each workspace of the group has a twin that gets the same calls one at a time.
    const suffix = ++unique;
    const pairs: Array<[Tenant, Tenant]> = [];
    for (let n = 0; n < 7; n += 1) pairs.push([await createTenant(t.ctx.db), await createTenant(t.ctx.db)]);
    const linkedin = `https://www.linkedin.com/in/holder-${suffix}`;
    const email = (local: string, domain = 'gmail.com') => `${local}${suffix}@${domain}`;
    const setUp: Body[][] = [
      [{ name: 'Seed', email: email('seed', `acrossco${suffix}.example`), tags: ['Known'] }],
      [],
      [{ name: 'Seed', email: email('seed3') }],
      [{ name: 'Old', email: email('old'), tags: ['Known'] }],
      [],
      [
        { name: 'Tagged', email: email('tagged'), tags: ['Known', 'Second'] },
        { name: 'Upd', email: email('upd'), tags: ['Known'] },
      ],
      [
        { name: 'Holder', email: email('holder'), linkedin_url: linkedin, tags: ['Known'] },
        { name: 'Ev', email: email('ev', `evco${suffix}.example`) },
      ],
    ];
    const calls: Body[][] = [
      // Shared: a new person with a tag and a company (by the email's domain) that exist.
      [{ name: 'With company', email: email('ann', `acrossco${suffix}.example`), tags: ['Known'], job_title: 'CEO' }],
      // Shared: two new people, no company.
      [
        { name: 'Plain', email: email('ben'), phone: `+1 415 555 ${String(2000 + suffix).slice(-4)}` },
        { name: 'Plain 2', linkedin_url: `https://www.linkedin.com/in/across-${suffix}` },
      ],
      // On its own: a tag to create.
      [{ name: 'New tag', email: email('cy'), tags: ['Fresh'] }],
      // On its own: an existing person.
      [{ name: 'Old 2', email: email('old'), tags: ['Other'] }],
      // On its own: the same person twice (created, then updated).
      [
        { name: 'Twice', email: email('di') },
        { name: 'Twice 2', email: email('di'), job_title: 'Again' },
      ],
      // Shared: an existing person given a tag that exists (lead.tag_added) and a phone.
      [{ name: 'Upd 2', email: email('upd'), tags: ['Second', 'Known'], job_title: 'CTO', phone: `+1 415 555 ${String(3000 + suffix).slice(-4)}` }],
      // Shared: an existing person, its company kept, sent with a LinkedIn URL another lead holds (a warning).
      [{ name: 'Ev 2', email: email('ev', `evco${suffix}.example`), linkedin_url: linkedin, tags: ['Known'] }],
    ];
    for (const [index, pair] of pairs.entries()) for (const who of pair) for (const body of setUp[index]!) expect((await postLead(t, who, body)).status).toBe(201);

    const grouped = pairs.flatMap(([who], index) => calls[index]!.map((body) => () => sentNow(postLead(t, who, body))));
    const since = await lastOutboxId(t.ctx.db);
    const { result: answers, statements } = await statementsOf(t.ctx.pool, () => asOneGroup(grouped, undefined, pairs.length));
    const alone: Response[] = [];
    for (const [index, [, twin]] of pairs.entries()) for (const body of calls[index]!) alone.push(await postLead(t, twin, body));

    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 200, 201, 200, 200, 200]);
    expect(answers[8]!.body.meta.warnings).toHaveLength(1);
    let position = 0;
    for (const [index, [who, twin]] of pairs.entries()) {
      const [named, twinNamed] = [await namesOf(who.workspaceId), await namesOf(twin.workspaceId)];
      for (let n = 0; n < calls[index]!.length; n += 1, position += 1) {
        expect({ status: answers[position]!.status, body: named(answers[position]!.body) }).toEqual({ status: alone[position]!.status, body: twinNamed(alone[position]!.body) });
      }
      const ids = answers.slice(position - calls[index]!.length, position).map((answer) => answer.body.data.id as number);
      for (const id of ids) expect((await t.http.get(`/api/v1/leads/${id}`).set(twin.auth)).status).toBe(404);
      expect(named(await outboxSince(t.ctx.db, who.workspaceId, since))).toEqual(twinNamed(await outboxSince(t.ctx.db, twin.workspaceId, since)));
    }
    const across = statements.filter((statement) =>
      /AS k\(workspace_id, kind, value, n\)|AS r\(ord int, key_count int, workspace_id bigint|AS r\(workspace_id bigint, ord int, lead_id bigint/.test(statement),
    );
    expect(across).toHaveLength(CITUS ? 0 : 3);
  });

  it("writes new people of several workspaces with one lookup and one statement that commits on its own and counts each workspace's day (plain PostgreSQL; on Citus each workspace in the group's transaction)", async () => {
    const tenants = [await createTenant(t.ctx.db), await createTenant(t.ctx.db), await createTenant(t.ctx.db)];
    const suffix = ++unique;
    const createdToday = async (workspaceId: number) =>
      Number((await sql<{ n: string }>`SELECT coalesce(sum(created), 0) AS n FROM lead_daily_counts WHERE workspace_id = ${workspaceId}`.execute(t.ctx.db)).rows[0]!.n);
    const calls = tenants.flatMap((who, index) =>
      ['a', 'b'].map((letter) => () => sentNow(postLead(t, who, { name: `Alone ${index}${letter}`, email: `alone${suffix}-${index}${letter}@gmail.com` }))),
    );
    const { result: answers, statements } = await statementsOf(t.ctx.pool, () => asOneGroup(calls, undefined, tenants.length));

    expect(answers.map((answer) => [answer.status, answer.body.meta.status, answer.body.data.name])).toEqual(
      tenants.flatMap((_, index) => ['a', 'b'].map((letter) => [201, 'created', `Alone ${index}${letter}`])),
    );
    for (const [index, who] of tenants.entries()) {
      expect((await t.http.get(`/api/v1/leads/${answers[2 * index]!.body.data.id}`).set(who.auth)).status).toBe(200);
      expect(await createdToday(who.workspaceId)).toBe(2);
    }
    const written = statements.filter((statement) => statement.includes('AS r(ord int, key_count int, workspace_id bigint'));
    expect(written).toHaveLength(CITUS ? 0 : 1);
    for (const statement of written) expect(statement).toMatch(/INSERT INTO lead_daily_counts/);
  });

  // The shared new-lead statement of a group across workspaces (plain PostgreSQL only) meets a
  // person another writer created after the group's lookup.
  (CITUS ? it.skip : it)('answers a person another writer created after the lookup as an update, in a group across workspaces; the other workspace is not touched', async () => {
    const [first, second] = [await createTenant(t.ctx.db), await createTenant(t.ctx.db)];
    const suffix = ++unique;
    const raced = `raced${suffix}@gmail.com`;
    // The group looks up (sees nothing committed), then its shared statement waits on the email key.
    const {
      held: winner,
      answers: [racing, bystander],
    } = await asOneGroupBesideWriter(
      async (writer) => {
        const { rows } = await writer.query<{ id: string }>(`INSERT INTO leads (workspace_id, name, source, emails) VALUES ($1, 'Winner', 'api', ARRAY[$2::text]) RETURNING id`, [
          first.workspaceId,
          raced,
        ]);
        const winner = Number(rows[0]!.id);
        await writer.query(`INSERT INTO lead_identities (workspace_id, kind, value, lead_id) VALUES ($1, 'email', $2, $3)`, [first.workspaceId, raced, winner]);
        return winner;
      },
      'workspace_id bigint',
      [() => sentNow(postLead(t, first, { name: 'Loser', email: raced })), () => sentNow(postLead(t, second, { name: 'Bystander', email: `bystander${suffix}@gmail.com` }))],
    );

    expect(racing!.status).toBe(200);
    expect(racing!.body.meta).toMatchObject({ status: 'updated', matched_on: raced });
    expect(racing!.body.data).toMatchObject({ id: winner, name: 'Loser' });
    // Nothing the group wrote for it stayed (its statement failed whole, or its lead was undone): the workspace holds the winner only.
    expect(Number((await sql<{ n: string }>`SELECT count(*) AS n FROM leads WHERE workspace_id = ${first.workspaceId}`.execute(t.ctx.db)).rows[0]!.n)).toBe(1);
    expect(bystander!.status).toBe(201);
    expect(bystander!.body.meta).toMatchObject({ status: 'created' });
    expect(await countLeadsNamed('Bystander')).toBe(1);
  });
  // The shared merge of a group across workspaces (plain PostgreSQL only) meets a lead another
  // writer deleted after the group's lookup.
  (CITUS ? it.skip : it)(
    'answers an update whose lead another writer deleted after the lookup as a new person, in a group across workspaces; the other workspace is updated',
    async () => {
      const [first, second] = [await createTenant(t.ctx.db), await createTenant(t.ctx.db)];
      const suffix = ++unique;
      const doomed = await postLead(t, first, { name: 'Doomed', email: `gone${suffix}@gmail.com` });
      expect(doomed.status).toBe(201);
      expect((await postLead(t, second, { name: 'Kept', email: `kept${suffix}@gmail.com` })).status).toBe(201);
      // The group looks up (the lead is still there), then its shared merge waits on the lead's row.
      const {
        answers: [again, kept],
      } = await asOneGroupBesideWriter(
        (writer) => writer.query('DELETE FROM leads WHERE workspace_id = $1 AND id = $2', [first.workspaceId, doomed.body.data.id]),
        'workspace_id bigint, ord int, lead_id bigint',
        [
          () => sentNow(postLead(t, first, { name: 'Doomed 2', email: `gone${suffix}@gmail.com` })),
          () => sentNow(postLead(t, second, { name: 'Kept 2', email: `kept${suffix}@gmail.com` })),
        ],
      );

      expect(again!.status).toBe(201);
      expect(again!.body.meta).toMatchObject({ status: 'created', matched_on: null });
      expect(again!.body.data.id).not.toBe(doomed.body.data.id);
      expect(await countLeadsNamed('Doomed 2')).toBe(1);
      expect(kept!.status).toBe(200);
      expect(kept!.body.meta).toMatchObject({ status: 'updated', matched_on: `kept${suffix}@gmail.com` });
      expect(kept!.body.data.name).toBe('Kept 2');
    },
  );
});

describe('groups that fill', () => {
  it('starts no group beside a working one: requests arriving meanwhile wait, then run together as the next group', async () => {
    const held = await lockedLead();
    const before = await groupSizes();
    const blocker = post({ name: 'Blocker', email: held.email });
    const answers: Array<Promise<Response>> = [];
    try {
      await lockWaits(t, 1);
      answers.push(post(person()), post(person()));
      await eventually(async () => t.ctx.writeGroups.waiting === 2, 10_000, 2);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(t.ctx.writeGroups.waiting).toBe(2);
    } finally {
      await held.release();
    }
    expect((await blocker).status).toBe(200);
    expect((await Promise.all(answers)).map((answer) => answer.status)).toEqual([201, 201]);
    const after = await groupSizes();
    expect({ groups: after.groups - before.groups, requests: after.requests - before.requests }).toEqual({ groups: 2, requests: 3 });
  });
});

describe('a dry run', () => {
  it('never joins a group: it is answered while groups wait', async () => {
    const occupied = await occupyGroups();
    let queued: Promise<Response>;
    try {
      queued = post(person());
      await eventually(async () => t.ctx.writeGroups.waiting === 1, 10_000, 2);
      const preview = await post(person({ dry_run: true }));
      expect(preview.status).toBe(200);
      expect(preview.body.meta).toMatchObject({ status: 'created', dry_run: true });
      expect(t.ctx.writeGroups.waiting).toBe(1);
    } finally {
      await occupied.release();
    }
    expect((await queued).status).toBe(201);
    await occupied.finished();
  });
});

describe('an unexpected failure of one request', () => {
  it('fails that request alone (500); the set-based write of the others falls back to one by one and succeeds', async () => {
    await whileLeadsNamed(t.ctx.db, 'Explode', async () => {
      const kept = [person(), person()];
      const [a, exploding, b] = await asOneGroup([() => post(kept[0]!), () => post(person({ name: 'Explode' })), () => post(kept[1]!)]);
      expect(exploding!.status).toBe(500);
      expect([a!.status, b!.status]).toEqual([201, 201]);
      for (const sent of kept) expect(await countLeadsNamed(sent.name as string)).toBe(1);
      expect(await countLeadsNamed('Explode')).toBe(0);
    });
  });

  it('fails a request whose failure no row contains (its answer cannot be stored) alone; the others run again without it, exactly as alone', async () => {
    await whileAnswersContaining(t.ctx.db, 'Unstorable', async () => {
      const kept = [person(), person(), person()];
      const keys = kept.map((_, index) => `isolated-${Date.now()}-${index}`);
      const [a, b, failing, c] = await asOneGroup([
        () => post(kept[0]!, { 'Idempotency-Key': keys[0]! }),
        () => post(kept[1]!),
        () => post(person({ name: 'Unstorable' }), { 'Idempotency-Key': `isolated-failing-${Date.now()}` }),
        () => post(kept[2]!, { 'Idempotency-Key': keys[2]! }),
      ]);
      expect(failing!.status).toBe(500);
      expect(failing!.body.error).toBe('internal_error');
      for (const [answer, sent] of [
        [a, kept[0]],
        [b, kept[1]],
        [c, kept[2]],
      ] as const) {
        expect(answer!.status).toBe(201);
        expect(answer!.body.data).toMatchObject({ name: sent!.name, emails: [sent!.email] });
        expect(answer!.body.meta).toEqual({ status: 'created', dry_run: false, matched_on: null, match_kind: null, conflicts: [], warnings: [] });
      }
      for (const sent of kept) expect(await countLeadsNamed(sent.name as string)).toBe(1);
      expect(await countLeadsNamed('Unstorable')).toBe(0);
      // Their answers were stored with them: a retry replays each.
      const replayed = await post(kept[2]!, { 'Idempotency-Key': keys[2]! });
      expect(replayed.headers['idempotency-replayed']).toBe('true');
      expect(replayed.body).toEqual(c!.body);
    });
  });
});

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('deadlock retry', () => {
  it('reruns the transaction PostgreSQL aborted as a deadlock victim; both writers succeed', async () => {
    await sql`CREATE TABLE deadlock_probe (id integer PRIMARY KEY, n integer NOT NULL)`.execute(t.ctx.db);
    await sql`INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)`.execute(t.ctx.db);
    // Two writers lock the rows in opposite orders; each waits for the other's first lock
    // before taking its second one, so the first attempts deadlock for certain. The victim's
    // rerun starts once the other writer is done: rerun at once it could take its first row
    // back before the other's waiting update does and deadlock again (a race of the test's
    // making, wider on a loaded machine).
    const locked = { 1: signal(), 2: signal() };
    const done = { 1: signal(), 2: signal() };
    const runs: number[] = [];
    const writer = async (first: 1 | 2, second: 1 | 2) => {
      let attempt = 0;
      const result = await inTransactionRetried(t.ctx.db, async (trx) => {
        attempt += 1;
        runs.push(first);
        if (attempt > 1) await done[second].promise;
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${first}`.execute(trx);
        if (attempt === 1) {
          locked[first].resolve();
          await locked[second].promise;
        }
        await sql`UPDATE deadlock_probe SET n = n + 1 WHERE id = ${second}`.execute(trx);
        return first;
      });
      done[first].resolve();
      return result;
    };
    const results = await Promise.all([writer(1, 2), writer(2, 1)]);
    expect(results).toEqual([1, 2]);
    expect(runs).toHaveLength(3);
    const rows = await sql<{ id: number; n: number }>`SELECT id, n FROM deadlock_probe ORDER BY id`.execute(t.ctx.db);
    expect(rows.rows).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
  });
});
