import { describe, expect, it } from '@jest/globals';
import type { LeadInput } from '../../generated/api.js';
import type { BatchLookup, IdentityMatch } from '../../src/leads/lookup-repository.js';
import { lookedUpFirst, planRuns, runInputOf, runsAcrossWorkspaces, runsOf, type RowPlan, type RunInput } from '../../src/leads/intake/plan.js';
import { prepareLead } from '../../src/leads/intake/prepare.js';
import { DuplicateRejected, RowRejected } from '../../src/leads/intake/rejections.js';
import { switchesOf, type IntakeOptions, type WriteRequest } from '../../src/leads/intake/write-request.js';

// The planner's rules, with no database: what each row of a group does and the statements that
// do it, from the requests and what their lookup found (the executor's behaviour through HTTP:
// test/leads/write-groups.test.ts, batch.test.ts, batch-bulk.test.ts, round-trips.test.ts).

const UPDATE = switchesOf({}).options;
const options = (changes: Partial<IntakeOptions> = {}): IntakeOptions => ({ ...UPDATE, ...changes });
const person = (n: number, extra: Partial<LeadInput> = {}): LeadInput => ({ name: `Person ${n}`, email: `p${n}@gmail.com`, ...extra });
const run = (leads: LeadInput[], changes: Partial<IntakeOptions> = {}, { workspaceId = 1, dryRun = false, wantsRecord = true } = {}): RunInput => ({
  workspaceId,
  rows: leads.map((lead) => ({ lead: prepareLead(lead), wantsRecord })),
  options: options(changes),
  dryRun,
});
const found = (lookup: Partial<BatchLookup> = {}): BatchLookup => ({ tags: [], matches: [], companies: [], ...lookup });
const held = (kind: IdentityMatch['kind'], value: string, leadId: number): IdentityMatch => ({ kind, value, lead_id: leadId });
const tag = (id: number, name: string) => ({ id, name, color: null, active: true });

/** Each row's kind, with a rejection's field (`rejected:tags`) or the lead a merge goes into (`merge:7`). */
function kinds(rows: readonly RowPlan[]): string[] {
  return rows.map((row) => {
    if (row.kind === 'merge') return `merge:${row.match.leadId}`;
    if (row.kind === 'rejected') return `rejected:${row.rejected instanceof RowRejected ? row.rejected.field : 'duplicate'}`;
    return row.kind;
  });
}
/** One run's plan; `lookup` 'none': the run has no lookup. */
const planOne = (input: RunInput, lookup: BatchLookup | 'none' = found()) =>
  planRuns([input], [lookup === 'none' ? undefined : lookup], { severalWorkspaces: false, mayCommitAlone: false });

describe('the planner', () => {
  describe('the match rule (dedup order): the strongest key held decides, the other leads are conflicts', () => {
    const lead: LeadInput = { name: 'Ann', email: 'ann@acme.example', emails: ['ann@other.example'], linkedin_url: 'https://www.linkedin.com/in/ann', phone: '+1 555 010 9999' };
    const phone = prepareLead(lead).identities.find((key) => key.kind === 'phone')!.value;
    it.each([
      ['the first email over the second', [held('email', 'ann@other.example', 2), held('email', 'ann@acme.example', 1)], 1, [2]],
      ['any email over the LinkedIn handle', [held('linkedin', 'ann', 3), held('email', 'ann@other.example', 2)], 2, [3]],
      ['the LinkedIn handle over the phone', [held('phone', phone, 4), held('linkedin', 'ann', 3)], 3, [4]],
      ['the phone alone', [held('phone', phone, 4)], 4, []],
      ['one lead holding several keys is no conflict', [held('email', 'ann@acme.example', 1), held('phone', phone, 1)], 1, []],
    ])('%s', (_, matches, leadId, conflicts) => {
      const row = planOne(run([lead]), found({ matches })).rows[0]![0]!;
      expect(row).toMatchObject({ kind: 'merge', match: { leadId } });
      expect(row.kind === 'merge' && row.match.conflicts.map((conflict) => conflict.lead_id)).toEqual(conflicts);
    });
  });

  describe('the contact rule: a row whose contact details no lead holds creates one; one held, it matches', () => {
    it.each([
      ['no key held', [], 'create'],
      ['its email held', [held('email', 'p1@gmail.com', 9)], 'merge:9'],
      ['another key held, not its own', [held('email', 'p2@gmail.com', 9)], 'create'],
    ])('%s: %s', (_, matches, kind) => {
      expect(kinds(planOne(run([person(1)]), found({ matches })).rows[0]!)).toEqual([kind]);
    });
  });

  describe('on_duplicate decides what a match does', () => {
    it.each([
      ['update', 'merge:9'],
      ['skip', 'alone'],
      ['error', 'rejected:duplicate'],
    ] as const)('%s: %s', (onDuplicate, kind) => {
      const plan = planOne(run([person(1)], { onDuplicate }), found({ matches: [held('email', 'p1@gmail.com', 9)] }));
      expect(kinds(plan.rows[0]!)).toEqual([kind]);
      if (onDuplicate === 'error') expect((plan.rows[0]![0] as { rejected: DuplicateRejected }).rejected.match).toMatchObject({ lead_id: 9, matched_on: 'p1@gmail.com' });
    });
  });

  it('runs every row of a dry run, and of a run without a lookup, alone and without a view', () => {
    const matches = [held('email', 'p1@gmail.com', 9)];
    for (const plan of [planOne(run([person(1), person(2)], {}, { dryRun: true }), found({ matches })), planOne(run([person(1), person(2)]), 'none')]) {
      expect(plan.rows[0]).toEqual([{ kind: 'alone' }, { kind: 'alone' }]);
      expect(plan.steps).toEqual([{ alone: { run: 0, index: 0 } }, { alone: { run: 0, index: 1 } }]);
    }
  });

  describe('companies: none, company.id, an email domain, details for a company that exists, or a new company with details and a domain go in a statement; details without a domain run alone', () => {
    const acme = found({ companies: [{ id: 6, domain: 'acme.example' }] });
    const fill = (details: Record<string, unknown>) => ({ kind: 'create', company: { id: 6, fill: expect.objectContaining(details) } });
    it.each([
      ['no company (free mail)', person(1), found(), { kind: 'create', company: null }],
      ['company.id', person(1, { company: { id: 5 } }), found({ companies: [{ id: 5, domain: null }] }), { kind: 'create', company: { id: 5 } }],
      ['an email domain found', person(1, { email: 'p@acme.example' }), found({ companies: [{ id: 6, domain: 'acme.example' }] }), { kind: 'create', company: { id: 6 } }],
      ['an email domain to create', person(1, { email: 'p@acme.example' }), found(), { kind: 'create', company: { newDomain: 'acme.example' } }],
      ['a company name', person(1, { company: { name: 'Acme' } }), found(), { kind: 'alone' }],
      [
        'a website',
        person(1, { company: { website: 'https://acme.example' } }),
        found(),
        { kind: 'create', company: { newCompany: expect.objectContaining({ domain: 'acme.example' }) } },
      ],
      [
        'details for an email domain to create',
        person(1, { email: 'p@acme.example', company: { industry: 'Tools' } }),
        found(),
        { kind: 'create', company: { newCompany: expect.objectContaining({ domain: 'acme.example', industry: 'Tools' }) } },
      ],
      ['a website found, with a name', person(1, { company: { name: 'Acme', website: 'https://acme.example' } }), acme, fill({ name: 'Acme' })],
      ['details for the email domain found', person(1, { email: 'p@acme.example', company: { industry: 'Tools' } }), acme, fill({ industry: 'Tools' })],
      ['details for company.id', person(1, { company: { id: 6, industry: 'Tools' } }), acme, fill({ industry: 'Tools' })],
      ['a name without a domain', person(1, { company: { name: 'Acme' } }), acme, { kind: 'alone' }],
    ])('%s', (_, lead, lookup, expected) => {
      expect(planOne(run([lead]), lookup).rows[0]![0]).toMatchObject(expected);
    });

    it('fills a company with one set of details per run: a row with other details for it runs alone, in its place', () => {
      const at = (n: number, industry: string) => person(n, { email: `p${n}@acme.example`, company: { industry } });
      const plan = planOne(run([at(1, 'Tools'), at(2, 'Tools'), at(3, 'Toys'), at(4, 'Tools')]), found({ companies: [{ id: 6, domain: 'acme.example' }] }));
      expect(kinds(plan.rows[0]!)).toEqual(['create', 'create', 'alone', 'create']);
      expect(plan.steps).toEqual([
        { write: 'create', workspaces: 'one', rows: [0, 1].map((index) => ({ run: 0, index })) },
        { alone: { run: 0, index: 2 } },
        { write: 'create', workspaces: 'one', rows: [{ run: 0, index: 3 }] },
      ]);
    });

    it('creates a new company with details in the statement of its first row; later rows of its domain fill in the company it creates, unless it creates nothing', () => {
      const at = (n: number, industry: string, extra: Partial<LeadInput> = {}) => person(n, { company: { name: 'New Co', website: 'https://new.example', industry }, ...extra });
      const plan = planOne(run([at(1, 'Tools'), at(2, 'Tools'), at(3, 'Toys')]));
      expect(plan.rows[0]!.map((row) => row.kind)).toEqual(['create', 'create', 'alone']);
      expect(plan.rows[0]![0]).toMatchObject({ company: { newCompany: expect.objectContaining({ name: 'New Co', domain: 'new.example', industry: 'Tools' }) } });
      expect(plan.rows[0]![1]).toMatchObject({ company: { domain: 'new.example', fill: expect.objectContaining({ industry: 'Tools' }) } });
      // Skipped as a duplicate, the first row writes no company: the later one creates it.
      const skipped = planOne(run([at(1, 'Tools'), at(2, 'Tools')], { onDuplicate: 'skip' }), found({ matches: [held('email', 'p1@gmail.com', 9)] }));
      expect(skipped.rows[0]!.map((row) => row.kind)).toEqual(['alone', 'create']);
      expect(skipped.rows[0]![1]).toMatchObject({ company: { newCompany: expect.objectContaining({ domain: 'new.example' }) } });
    });

    it('runs alone a second new domain for a name the statements already give a new company (its domainless company takes one domain)', () => {
      const at = (n: number, website: string) => person(n, { company: { name: 'New Co', website } });
      const plan = planOne(run([at(1, 'https://new.example'), at(2, 'https://new.example.org'), at(3, 'https://new.example')]));
      expect(kinds(plan.rows[0]!)).toEqual(['create', 'alone', 'create']);
    });

    it('never commits alone nor shares a statement across workspaces with a company to fill in (written before the leads)', () => {
      const lead = person(1, { email: 'p@acme.example', company: { industry: 'Tools' } });
      const lookup = found({ companies: [{ id: 6, domain: 'acme.example' }] });
      expect(planRuns([run([lead])], [lookup], { severalWorkspaces: false, mayCommitAlone: true }).commitsAlone).toBe(false);
      const shared = planRuns([run([lead]), run([person(2)], {}, { workspaceId: 2 })], [lookup, found()], { severalWorkspaces: true, mayCommitAlone: false });
      expect(shared.steps).toEqual([
        { write: 'create', workspaces: 'one', rows: [{ run: 1, index: 0 }] },
        { write: 'create', workspaces: 'one', rows: [{ run: 0, index: 0 }] },
      ]);
    });

    it('rejects a company.id the workspace does not have', () => {
      expect(kinds(planOne(run([person(1, { company: { id: 5 } })])).rows[0]!)).toEqual(['rejected:company.id']);
    });
  });

  describe('tags', () => {
    it.each([
      ['a tag id that exists', { tag_ids: [3] }, {}, { kind: 'create', references: { tagIds: [3], missingTagNames: [] } }],
      ['a name that exists, in any case', { tags: ['vip'] }, {}, { kind: 'create', references: { tagIds: [3], missingTagNames: [] } }],
      ['a name to create', { tags: ['New'] }, {}, { kind: 'create', references: { tagIds: [], missingTagNames: ['New'] } }],
      ['an unknown tag id', { tag_ids: [4] }, {}, { kind: 'rejected', rejected: expect.objectContaining({ field: 'tag_ids' }) }],
      ['a name to create without create_missing_tags', { tags: ['New'] }, { createMissingTags: false }, { kind: 'rejected', rejected: expect.objectContaining({ field: 'tags' }) }],
    ])('%s', (_, fields, changes, expected) => {
      expect(planOne(run([person(1, fields)], changes), found({ tags: [tag(3, 'VIP')] })).rows[0]![0]).toMatchObject(expected);
    });
  });

  describe('rows that collide inside one group', () => {
    it('runs rows that send the same key alone (the later one must see the earlier), and no view of the lookup', () => {
      const plan = planOne(run([person(1), person(2, { emails: ['p1@gmail.com'] }), person(3)]));
      expect(plan.rows[0]).toEqual([{ kind: 'alone' }, { kind: 'alone' }, expect.objectContaining({ kind: 'create' })]);
    });

    it('merges the first row into a lead and runs a later row matching the same lead alone', () => {
      const matches = [held('email', 'p1@gmail.com', 9), held('email', 'p2@gmail.com', 9)];
      expect(kinds(planOne(run([person(1), person(2)]), found({ matches })).rows[0]!)).toEqual(['merge:9', 'alone']);
    });

    it('writes consecutive rows of one kind in one statement, in order; a row alone ends the statement, a rejected row does not', () => {
      const matches = [held('email', 'p3@gmail.com', 9), held('email', 'p4@gmail.com', 8)];
      const leads = [person(1), person(2, { tag_ids: [77] }), person(5), person(6, { company: { name: 'Acme' } }), person(7), person(3), person(4)];
      const plan = planOne(run(leads), found({ matches }));
      expect(kinds(plan.rows[0]!)).toEqual(['create', 'rejected:tag_ids', 'create', 'alone', 'create', 'merge:9', 'merge:8']);
      const at = (...indexes: number[]) => indexes.map((index) => ({ run: 0, index }));
      expect(plan.steps).toEqual([
        { write: 'create', workspaces: 'one', rows: at(0, 2) },
        { alone: { run: 0, index: 3 } },
        { write: 'create', workspaces: 'one', rows: at(4) },
        { write: 'merge', workspaces: 'one', rows: at(5, 6) },
      ]);
    });
  });

  describe('the shape of a group', () => {
    const request = (workspaceId: number, changes: Partial<WriteRequest<unknown>> = {}): WriteRequest<unknown> => ({
      workspaceId,
      apiKeyId: 1,
      idempotency: null,
      rows: [{ lead: prepareLead(person(workspaceId)), wantsRecord: true }],
      options: UPDATE,
      dryRun: false,
      answer: () => ({ status: 201, body: null }),
      ...changes,
    });
    const keyed = { idempotency: { workspaceId: 1, apiKeyId: 1, key: 'k', fingerprint: 'f' } };

    it.each([
      ['single calls of one workspace', [request(1), request(1)], false, 1],
      ['single calls of two workspaces, statements spanning them', [request(1), request(2)], true, 2],
      ['single calls of two workspaces, each statement of one (Citus)', [request(1), request(2)], false, null],
      ['a call with an Idempotency-Key (its claim decides first)', [request(1), request(1, keyed)], false, null],
      ['a dry run', [request(1), request(1, { dryRun: true })], false, null],
      ['a batch (its rows are not answered with their leads)', [request(1, { rows: [{ lead: prepareLead(person(1)), wantsRecord: false }] })], false, null],
      ['a workspace with two runs (other switches)', [request(1), request(1, { options: options({ enrich: false }) })], true, null],
    ])('%s: may commit alone with %s runs', (_, requests, severalWorkspaces, runs) => {
      expect(lookedUpFirst(requests, severalWorkspaces)?.length ?? null).toBe(runs);
    });

    it("on Citus, a batch may commit alone as well (its executor writes it in one call to the workspace's node); an Idempotency-Key still may not", () => {
      const batch = request(1, { rows: [{ lead: prepareLead(person(1)), wantsRecord: false }] });
      expect(lookedUpFirst([batch], false, true)?.length).toBe(1);
      expect(lookedUpFirst([batch, request(1, keyed)], false, true)).toBeNull();
    });

    it('commits alone only when every row creates a person whose company and tags exist', () => {
      const plan = (lead: LeadInput, lookup = found()) => planRuns([run([person(1), lead])], [lookup], { severalWorkspaces: false, mayCommitAlone: true });
      expect(plan(person(2))).toMatchObject({ commitsAlone: true, steps: [{ write: 'create', workspaces: 'one' }] });
      expect(plan(person(2), found({ matches: [held('email', 'p2@gmail.com', 9)] })).commitsAlone).toBe(false);
      expect(plan(person(2, { tags: ['New'] })).commitsAlone).toBe(false);
      expect(plan(person(2, { email: 'p@acme.example' })).commitsAlone).toBe(false);
      expect(planRuns([run([person(1)])], [found()], { severalWorkspaces: false, mayCommitAlone: false }).commitsAlone).toBe(false);
    });

    it('shares statements among workspaces whose runs all create or all merge with what exists, creates first; any other run has its own', () => {
      const runs = [
        run([person(1)], {}, { workspaceId: 1 }),
        run([person(2)], {}, { workspaceId: 2 }),
        run([person(3)], {}, { workspaceId: 3 }),
        run([person(4)], {}, { workspaceId: 4 }),
      ];
      const lookups = [found(), found({ matches: [held('email', 'p2@gmail.com', 9)] }), found(), found({ matches: [held('email', 'p4@gmail.com', 8)] })];
      runs[2] = run([person(3, { tags: ['New'] })], {}, { workspaceId: 3 });
      const plan = planRuns(runs, lookups, { severalWorkspaces: true, mayCommitAlone: false });
      expect(plan.steps).toEqual([
        { write: 'create', workspaces: 'one', rows: [{ run: 0, index: 0 }] },
        {
          write: 'merge',
          workspaces: 'several',
          rows: [
            { run: 1, index: 0 },
            { run: 3, index: 0 },
          ],
        },
        { write: 'create', workspaces: 'one', rows: [{ run: 2, index: 0 }] },
      ]);
      expect(planRuns(runs, lookups, { severalWorkspaces: false, mayCommitAlone: false }).steps.every((step) => !('write' in step) || step.workspaces === 'one')).toBe(true);
    });

    it('spans workspaces only with runs of a workspace no other run is of, no dry run, and at least two of them', () => {
      const requests = [request(1), request(2), request(2, { options: options({ enrich: false }) }), request(3, { dryRun: true }), request(4)];
      const workspacesOf = (indexes: number[]) => runsAcrossWorkspaces(runsOf(requests, indexes)).map((shared) => runInputOf(requests)(shared).workspaceId);
      expect(workspacesOf([0, 1, 2, 3, 4])).toEqual([1, 4]);
      expect(workspacesOf([0, 1, 2])).toEqual([]);
    });
  });
});
