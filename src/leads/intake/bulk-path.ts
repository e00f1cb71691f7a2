import { findCompaniesByDomains } from '../../companies/repository.js';
import type { Executor } from '../../db/connect.js';
import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { findTagsByNames } from '../../tags/repository.js';
import { companyHasDetails } from './company-resolution.js';
import type { BatchLookup, IdentityMatch, IntakeLookup, MatchKey } from '../lookup-repository.js';
import { lookupForBatch, rowLookup } from './lookup.js';
import { insertCompaniesAndTags, insertNewLeads, type NewLeadOf, type NewLeadWrite } from '../new-leads-repository.js';
import type { PreparedLead } from './prepare.js';
import { checkReferences, leadValues, mergeOfRow, type References } from './row-intake.js';
import { strongestMatch, type StrongestMatch } from './match.js';
import { mergeIntoLeads, type LeadMerge } from '../write-repository.js';
import type { IntakeOptions } from './options.js';

// The bulk path of the intake engine (intake-engine.ts): consecutive rows that certainly
// create a new person, or that certainly update the lead they match, are written set-based, a
// run of them in two statements.

/** How a row on the bulk path gets its company: an existing one, one to create by domain, or none. */
type BulkCompany = { id: number } | { newDomain: string } | null;

/** A row on the bulk path (see planBulkRows): its index among the rows, its references checked, and what it does. */
export type BulkRow = {
  index: number;
  lead: PreparedLead;
  references: References;
  company: BulkCompany;
} & ({ kind: 'create' } | { kind: 'update'; match: StrongestMatch; matches: IdentityMatch[] });
type UpdateRow = Extract<BulkRow, { kind: 'update' }>;

/** What planBulkRows decided: each row's bulk write (null: it runs alone), and its view of the lookup where that is all it needs. */
export interface BulkPlan {
  plan: Array<BulkRow | null>;
  lookups: Array<IntakeLookup | undefined>;
}

/**
 * The company rule of the bulk path: the row's company is none, or is named by company.id
 * alone, or by the business domain of the person's email alone (found, or created with that
 * domain exactly as intakeLead would). Any company detail to fill in, a website or a name sends
 * the row the general way. Returns the row's company, or undefined when the row does not qualify.
 */
function bulkCompany(lead: PreparedLead, lookup: IntakeLookup): BulkCompany | undefined {
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) return undefined;
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return lookup.companyByDomain !== null ? { id: lookup.companyByDomain } : { newDomain: company.domain };
}

/**
 * Reads, in one statement, what every row refers to, and plans the rows that run set-based:
 * a row whose references hold, whose company follows the company rule (bulkCompany) and none
 * of whose match keys is shared with another row of the run either certainly creates a new
 * person (none of its keys is held in the workspace) or, under on_duplicate update, updates
 * the lead it matches, unless an earlier row of the run updates that lead too (the later one
 * must see the earlier's update: it runs alone). Rows on the bulk path are independent of each
 * other, so writing them together is writing them one by one. Returns the rows on the bulk path by
 * index, and each row's view of the lookup where it is all the row needs to run alone: no
 * other row of the run shares a key with it or may create a tag or company it names (the
 * view of a lookup read a moment ago is as good as one read now: concurrent writers are
 * settled by the match keys' claims either way). `prefetched`: the run's lookup, when it was read
 * with other workspaces' (lookupsAcrossWorkspaces).
 */
export async function planBulkRows(db: Executor, workspaceId: number, leads: readonly PreparedLead[], options: IntakeOptions, prefetched?: BatchLookup): Promise<BulkPlan> {
  const lookup = prefetched ?? (await lookupForBatch(db, workspaceId, leads));
  const keyOf = (key: MatchKey) => `${key.kind}\u0000${key.value}`;
  const sent = new Map<string, number>();
  for (const key of leads.flatMap((lead) => lead.identities)) sent.set(keyOf(key), (sent.get(keyOf(key)) ?? 0) + 1);
  const sharedKey = (key: MatchKey) => sent.get(keyOf(key))! > 1;

  const lookups: Array<IntakeLookup | undefined> = [];
  const updated = new Set<number>();
  const plan = leads.map((lead, index): BulkRow | null => {
    const view = rowLookup(lookup, lead);
    let references: References;
    try {
      references = checkReferences(view, lead, options);
    } catch {
      lookups[index] = view;
      return null; // the row runs alone and reports the rejection
    }
    const company = lead.company;
    const companySettled = company === null || company.id !== null || (company.domain !== null && view.companyByDomain !== null);
    const shared = lead.identities.some(sharedKey);
    if (companySettled && references.missingTagNames.length === 0 && !shared) lookups[index] = view;
    const bulk = bulkCompany(lead, view);
    if (bulk === undefined || shared) return null;
    const match = strongestMatch(lead.identities, view.matches);
    if (!match) return { kind: 'create', index, lead, references, company: bulk };
    if (options.onDuplicate !== 'update' || updated.has(match.leadId)) return null;
    updated.add(match.leadId);
    return { kind: 'update', index, lead, references, company: bulk, match, matches: view.matches };
  });
  return { plan, lookups };
}

/** What the new-lead statement writes for a bulk row that creates a person: its company and tags resolved, the events of the companies it created first. */
const newLeadWrite = (row: BulkRow, companyId: number | null, tagIds: readonly number[], analyzeEvents: readonly CompanyAnalyzeEvent[]): NewLeadWrite => ({
  values: leadValues(row.lead, companyId),
  keys: row.lead.identities,
  tagIds,
  events: [...analyzeEvents, { topic: 'lead.created' }],
  trace: row.lead.trace,
});

/**
 * The company id of a bulk row whose company (if any) and tags all exist, so its statement needs
 * nothing written before it; undefined for any other row.
 */
const companyWhenAllExist = (row: BulkRow): number | null | undefined =>
  row.references.missingTagNames.length > 0 ? undefined : row.company === null ? null : 'id' in row.company ? row.company.id : undefined;

/**
 * A bulk row that creates a person whose company and tags all exist, as the new-lead statement
 * writes it with nothing written before it; null for any other row.
 */
function readyNewLead(row: BulkRow | null): NewLeadWrite | null {
  if (row?.kind !== 'create') return null;
  const companyId = companyWhenAllExist(row);
  return companyId === undefined ? null : newLeadWrite(row, companyId, row.references.tagIds, []);
}

/** A bulk row that creates a person, as the new-lead statement writes it with its workspace. */
export type ReadyNewLead = { row: BulkRow; lead: NewLeadOf };

/** Every row of a run's plan as readyNewLead writes it, in the run `workspaceId`; null unless every row is one. */
export function readyNewLeads({ plan }: BulkPlan, workspaceId: number): ReadyNewLead[] | null {
  const ready: ReadyNewLead[] = [];
  for (const row of plan) {
    const lead = readyNewLead(row);
    if (!lead) return null;
    ready.push({ row: row!, lead: { ...lead, workspaceId } });
  }
  return ready;
}

/** A bulk row that updates the lead it matches, as the merge statement writes it (with its warnings). */
export type ReadyMerge = { row: UpdateRow; merge: LeadMerge; warnings: string[] };

/**
 * A bulk row that updates the lead it matches with a company and tags that all exist, as the
 * merge statement writes it with nothing written before it; null for any other row.
 */
export function readyMerge(row: BulkRow | null): ReadyMerge | null {
  if (row?.kind !== 'update') return null;
  const companyId = companyWhenAllExist(row);
  return companyId === undefined ? null : { row, ...mergeOfRow(row.match, row.lead, row.matches, { companyId, tagIds: row.references.tagIds, events: [] }) };
}

const newDomainOf = (row: BulkRow) => (row.company && 'newDomain' in row.company ? row.company.newDomain : null);

/**
 * The statements of a run of bulk rows: first the companies and tags they need that do not
 * exist yet, then every new lead with its match keys, tags and events (with `records`, each
 * returned as stored), then every update (each returned as stored). Returns the leads
 * written, the leads merged and the analysis events of the companies each row created.
 */
export async function writeBulkRows(db: Executor, workspaceId: number, run: readonly BulkRow[], options: IntakeOptions, records: boolean) {
  // Companies by domain and tags by name that the rows need and the lookup did not find. They
  // are inserted in the order of their unique keys, so two transactions creating the same
  // ones wait for each other instead of deadlocking; the first row naming a new company fires
  // its analysis.
  const domains = [...new Set(run.flatMap((row) => newDomainOf(row) ?? []))].sort();
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of run) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const companyIds = new Map<string, number>();
  const tagIds = new Map<string, number>();
  const analyzeEvents = new Map<number, CompanyAnalyzeEvent[]>();

  if (domains.length > 0 || missingTags.size > 0) {
    const tagNames = [...missingTags.keys()].sort().map((lowered) => missingTags.get(lowered)!);
    const { created, tags } = await insertCompaniesAndTags(db, workspaceId, domains, tagNames, options.enrich);
    for (const company of created) companyIds.set(company.domain, company.id);
    for (const tag of tags) tagIds.set(tag.name.toLowerCase(), tag.id);

    // Created a moment ago by a concurrent request (or an earlier row): read them.
    const unresolvedDomains = domains.filter((domain) => !companyIds.has(domain));
    for (const company of await findCompaniesByDomains(db, workspaceId, unresolvedDomains)) companyIds.set(company.domain!, company.id);
    const unresolvedTags = [...missingTags.keys()].filter((name) => !tagIds.has(name));
    for (const tag of await findTagsByNames(db, workspaceId, unresolvedTags)) tagIds.set(tag.name.toLowerCase(), tag.id);

    const creator = new Map(created.filter((company) => company.status === 'pending').map((company) => [company.domain, company.id]));
    for (const row of run) {
      const domain = newDomainOf(row);
      const id = domain ? creator.get(domain) : undefined;
      if (id === undefined) continue;
      creator.delete(domain!);
      analyzeEvents.set(row.index, [{ topic: 'company.analyze', payload: { company_id: id } }]);
    }
  }

  const companyOf = (row: BulkRow) => {
    const companyId = row.company === null ? null : 'id' in row.company ? row.company.id : companyIds.get(row.company.newDomain);
    if (companyId === undefined) throw new Error(`company for ${newDomainOf(row)} could not be resolved`);
    return companyId;
  };
  const tagIdsOf = (row: BulkRow) => [...row.references.tagIds, ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!)];

  const creates = run.filter((row) => row.kind === 'create');
  const written =
    creates.length === 0
      ? []
      : await insertNewLeads(
          db,
          workspaceId,
          creates.map((row) => newLeadWrite(row, companyOf(row), tagIdsOf(row), analyzeEvents.get(row.index) ?? [])),
          { records },
        );

  const updates = run.filter((row): row is UpdateRow => row.kind === 'update');
  const planned = updates.map((row) =>
    mergeOfRow(row.match, row.lead, row.matches, { companyId: companyOf(row), tagIds: tagIdsOf(row), events: analyzeEvents.get(row.index) ?? [] }),
  );
  const merged = await mergeIntoLeads(
    db,
    workspaceId,
    planned.map(({ merge }) => merge),
  );
  const found = new Set(merged.map(({ ord }) => ord));
  return {
    created: written.map(({ ord, ...lead }) => ({ ...lead, row: creates[ord]! })),
    merged: merged.map(({ ord, ...record }) => ({ record, row: updates[ord]!, warnings: planned[ord]!.warnings })),
    /** Updates whose lead the merge no longer found (deleted since the lookup). */
    vanished: updates.filter((_, ord) => !found.has(ord)),
    analyzeEvents,
  };
}
