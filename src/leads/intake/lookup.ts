import type { Executor } from '../../db/connect.js';
import { readBatchLookup, readIntakeLookup, readLookupsAcross, type BatchLookup, type IntakeLookup, type IntakeLookupInput, type MatchKey } from '../lookup-repository.js';
import type { PreparedCompany, PreparedLead } from './prepare.js';

// What an intake row looks up before it writes (its tags, match keys and company candidates),
// read by the statements of src/leads/lookup-repository.ts, and what it finds.

/** The inputs of the key and tag parts of a lookup. */
const keyInputs = (keys: readonly MatchKey[]) => ({ kinds: keys.map((key) => key.kind), values: keys.map((key) => key.value) });
const tagInputs = (ids: readonly number[], names: readonly string[]) => ({
  tagIds: [...new Set(ids)],
  tagNames: [...new Set(names.map((name) => name.toLowerCase()))],
});

/**
 * The company an intake row joins as it is: company.id; else the one holding the payload's
 * domain; else, when the payload gives no domain at all, the one named company.name. Null when
 * a company has to be created, or a domainless named company has to take the domain.
 */
export const existingCompanyId = (company: PreparedCompany, lookup: IntakeLookup): number | null =>
  company.id ?? (company.domain !== null ? lookup.companyByDomain : lookup.companyByName);

/** What INTAKE_LOOKUP reads for a prepared lead: by-name candidates only when the payload gives no domain. */
export function intakeLookupInput(workspaceId: number, lead: PreparedLead): IntakeLookupInput {
  const company = lead.company;
  const domain = company?.domain ?? null;
  return {
    workspaceId,
    ...tagInputs(lead.tagIds, lead.tagNames),
    ...keyInputs(lead.identities),
    companyId: company?.id ?? null,
    domain,
    companyName: domain === null ? (company?.name?.toLowerCase() ?? null) : null,
  };
}

export const lookupForIntake = (db: Executor, workspaceId: number, lead: PreparedLead): Promise<IntakeLookup> => readIntakeLookup(db, intakeLookupInput(workspaceId, lead));

/** What a batch's lookup looks for: every row's tags, match keys and company references, each once. */
function batchReferences(leads: readonly PreparedLead[]) {
  const companies = leads.flatMap((lead) => (lead.company ? [lead.company] : []));
  return {
    ...tagInputs(
      leads.flatMap((lead) => lead.tagIds),
      leads.flatMap((lead) => lead.tagNames),
    ),
    ...keyInputs(leads.flatMap((lead) => lead.identities)),
    domains: [...new Set(companies.flatMap((company) => (company.domain !== null ? [company.domain] : [])))],
    companyIds: [...new Set(companies.flatMap((company) => (company.id !== null ? [company.id] : [])))],
  };
}

/** What lookupForIntake reads, for every row of a batch at once (one statement). */
export function lookupForBatch(db: Executor, workspaceId: number, leads: readonly PreparedLead[]): Promise<BatchLookup> {
  return readBatchLookup(db, { workspaceId, ...batchReferences(leads) });
}

/** lookupForBatch for the runs of several workspaces, in one statement (plain PostgreSQL only): each workspace's lookup. */
export async function lookupsAcrossWorkspaces(db: Executor, runs: ReadonlyArray<{ workspaceId: number; leads: readonly PreparedLead[] }>): Promise<Map<number, BatchLookup>> {
  const references = runs.map(({ workspaceId, leads }) => ({ workspaceId, ...batchReferences(leads) }));
  /** Every run's references of one kind, and beside each the workspace it is looked for in. */
  const all = <Value>(of: (run: (typeof references)[number]) => readonly Value[]) => references.flatMap(of);
  const workspacesOf = (of: (run: (typeof references)[number]) => readonly unknown[]) => references.flatMap((run) => of(run).map(() => run.workspaceId));
  const found = await readLookupsAcross(db, {
    keyWorkspaces: workspacesOf((run) => run.kinds),
    kinds: all((run) => run.kinds),
    values: all((run) => run.values),
    tagIdWorkspaces: workspacesOf((run) => run.tagIds),
    tagIds: all((run) => run.tagIds),
    tagNameWorkspaces: workspacesOf((run) => run.tagNames),
    tagNames: all((run) => run.tagNames),
    domainWorkspaces: workspacesOf((run) => run.domains),
    domains: all((run) => run.domains),
    companyIdWorkspaces: workspacesOf((run) => run.companyIds),
    companyIds: all((run) => run.companyIds),
  });
  const lookups = new Map<number, BatchLookup>(runs.map(({ workspaceId }) => [workspaceId, { tags: [], matches: [], companies: [] }]));
  for (const { workspace_id, tag } of found.tags) lookups.get(Number(workspace_id))!.tags.push(tag);
  for (const { workspace_id, ...match } of found.matches) lookups.get(Number(workspace_id))!.matches.push(match);
  for (const { workspace_id, ...company } of found.companies) lookups.get(Number(workspace_id))!.companies.push(company);
  return lookups;
}

/** One row's view of its batch's lookup, as lookupForIntake would have read it (by-name candidates aside). */
export function rowLookup(batch: BatchLookup, lead: PreparedLead): IntakeLookup {
  const company = lead.company;
  const found = (match: (candidate: BatchLookup['companies'][number]) => boolean) => batch.companies.find(match)?.id ?? null;
  return {
    tags: batch.tags,
    matches: batch.matches.filter((match) => lead.identities.some((key) => key.kind === match.kind && key.value === match.value)),
    companyById: company?.id != null ? found((candidate) => candidate.id === company.id) : null,
    companyByDomain: company?.domain != null ? found((candidate) => candidate.domain === company.domain) : null,
    companyByName: null,
  };
}
