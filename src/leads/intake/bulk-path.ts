import { findCompaniesByDomains } from '../../companies/repository.js';
import type { Executor } from '../../db/connect.js';
import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { findTagsByNames } from '../../tags/repository.js';
import { companyHasDetails } from './company-resolution.js';
import type { IntakeLookup, MatchKey } from '../lookup-repository.js';
import { lookupForBatch, rowLookup } from './lookup.js';
import { insertCompaniesAndTags, insertNewLeads } from '../new-leads-repository.js';
import type { PreparedLead } from './prepare.js';
import { checkReferences, leadValues, type References } from './row-intake.js';
import type { IntakeOptions } from './options.js';

// The bulk path of the intake engine (intake-engine.ts): consecutive rows that certainly
// create a new person are written set-based, a run of them in two statements.

/** How a row on the bulk path gets its company: an existing one, one to create by domain, or none. */
type BulkCompany = { id: number } | { newDomain: string } | null;

/** A row on the bulk path (see bulkCompany): its index among the rows, its references checked. */
export interface BulkRow {
  index: number;
  lead: PreparedLead;
  references: References;
  company: BulkCompany;
}

/**
 * The rule for the bulk path: the row certainly creates a new person (none of its match keys
 * is held in the workspace, nor shared with another row of the same run), and its company is
 * none, or is named by company.id alone, or by the business domain of the person's email alone
 * (found, or created with that domain exactly as intakeLead would). Any company detail to fill
 * in, a website or a name sends the row the general way. Returns the row's company, or
 * undefined when the row does not qualify. The references are checked by the caller first.
 */
function bulkCompany(lead: PreparedLead, lookup: IntakeLookup, sharedKey: (key: MatchKey) => boolean): BulkCompany | undefined {
  const matched = (key: MatchKey) => lookup.matches.some((match) => match.kind === key.kind && match.value === key.value);
  if (lead.identities.some((key) => matched(key) || sharedKey(key))) return undefined;
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) return undefined;
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return lookup.companyByDomain !== null ? { id: lookup.companyByDomain } : { newDomain: company.domain };
}

/**
 * Reads, in one statement, what every row refers to. Returns the rows on the bulk path by
 * index, and each row's view of the lookup where it is all the row needs to run alone: no
 * other row of the run shares a key with it or may create a tag or company it names (the
 * view of a lookup read a moment ago is as good as one read now: concurrent writers are
 * settled by the match keys' claims either way).
 */
export async function planBulkRows(
  db: Executor,
  workspaceId: number,
  leads: readonly PreparedLead[],
  options: IntakeOptions,
): Promise<{ plan: Array<BulkRow | null>; lookups: Array<IntakeLookup | undefined> }> {
  const lookup = await lookupForBatch(db, workspaceId, leads);
  const keyOf = (key: MatchKey) => `${key.kind}\u0000${key.value}`;
  const sent = new Map<string, number>();
  for (const key of leads.flatMap((lead) => lead.identities)) sent.set(keyOf(key), (sent.get(keyOf(key)) ?? 0) + 1);
  const sharedKey = (key: MatchKey) => sent.get(keyOf(key))! > 1;

  const lookups: Array<IntakeLookup | undefined> = [];
  const plan = leads.map((lead, index) => {
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
    if (companySettled && references.missingTagNames.length === 0 && !lead.identities.some(sharedKey)) lookups[index] = view;
    const bulk = bulkCompany(lead, view, sharedKey);
    return bulk === undefined ? null : { index, lead, references, company: bulk };
  });
  return { plan, lookups };
}

const newDomainOf = (row: BulkRow) => (row.company && 'newDomain' in row.company ? row.company.newDomain : null);

/**
 * The statements of a run of bulk rows: first the companies and tags they need that do not
 * exist yet, then every lead with its match keys, tags and events (with `records`, each
 * returned as stored). Returns the leads written and the analysis events of the companies
 * each row created.
 */
export async function writeBulkRows(db: Executor, workspaceId: number, run: readonly BulkRow[], options: IntakeOptions, records: boolean) {
  // Companies by domain and tags by name that the rows need and the lookup did not find,
  // created now in the order the rows name them (the first row naming a new company fires its
  // analysis).
  const domains = [...new Set(run.flatMap((row) => newDomainOf(row) ?? []))];
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of run) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const companyIds = new Map<string, number>();
  const tagIds = new Map<string, number>();
  const analyzeEvents = new Map<number, CompanyAnalyzeEvent[]>();

  if (domains.length > 0 || missingTags.size > 0) {
    const { created, tags } = await insertCompaniesAndTags(db, workspaceId, domains, [...missingTags.values()], options.enrich);
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

  const written = await insertNewLeads(
    db,
    workspaceId,
    run.map((row) => {
      const domain = newDomainOf(row);
      const companyId = row.company === null ? null : 'id' in row.company ? row.company.id : companyIds.get(row.company.newDomain);
      if (companyId === undefined) throw new Error(`company for ${domain} could not be resolved`);
      return {
        values: leadValues(row.lead, companyId),
        keys: row.lead.identities,
        tagIds: [...row.references.tagIds, ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!)],
        events: [...(analyzeEvents.get(row.index) ?? []), { topic: 'lead.created' as const }],
      };
    }),
    { records },
  );
  return { written, analyzeEvents };
}
