import { fillCompany, findCompanyByDomain, findCompanyByName, giveDomainToNamedCompany, insertCompanyIfNew, lockCompanyName } from '../../companies/repository.js';
import { newCompanyStatus } from '../../companies/rules.js';
import type { Executor } from '../../db/connect.js';
import { inSavepoint } from '../../db/savepoint.js';
import { isUniqueViolation } from '../../db/sql.js';
import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { findTagsByNames, insertMissingTags } from '../../tags/repository.js';
import type { LeadValues } from '../columns.js';
import { readIntakeLookup, type IdentityMatch, type IntakeLookup } from '../lookup-repository.js';
import type { NewLeadOf } from '../new-leads-repository.js';
import type { LeadMergeOf } from '../write-repository.js';
import type { References, StrongestMatch } from './match.js';
import { companyDetails, companyHasDetails, newCompanyLinks, type PreparedCompany, type PreparedLead } from './prepare.js';
import type { IntakeOptions } from './write-request.js';

// What rows write besides their leads, and what their leads' statements are given. A row alone
// (executor-steps.ts) reads its own lookup and its match, and resolves its company (contract:
// "company resolution") and tags here before the executor writes its lead; a statement's rows
// get their new companies and tags in one statement (writeCompaniesAndTags, set-company.ts).

/** The lookup of a row alone: its tags, match keys and company candidates (by name only when the payload gives no domain). */
export function lookupForIntake(db: Executor, workspaceId: number, lead: PreparedLead): Promise<IntakeLookup> {
  const company = lead.company;
  const domain = company?.domain ?? null;
  return readIntakeLookup(db, {
    workspaceId,
    tagIds: [...new Set(lead.tagIds)],
    tagNames: [...new Set(lead.tagNames.map((name) => name.toLowerCase()))],
    kinds: lead.identities.map((key) => key.kind),
    values: lead.identities.map((key) => key.value),
    companyId: company?.id ?? null,
    domain,
    companyName: domain === null ? (company?.name?.toLowerCase() ?? null) : null,
  });
}

/** The company and tags a row alone's lead gets, and the events their creation fires. */
export interface Resolution {
  company: { id: number; created: boolean } | null;
  tagIds: number[];
  createdTagIds: number[];
  events: CompanyAnalyzeEvent[];
}

/** Resolves a row alone's company and creates the tags it names that do not exist. */
export async function resolveRow(db: Executor, workspaceId: number, lead: PreparedLead, lookup: IntakeLookup, references: References, options: IntakeOptions): Promise<Resolution> {
  const events: CompanyAnalyzeEvent[] = [];
  const company = lead.company ? await resolveCompany(db, workspaceId, lead.company, options.enrich, events, lookup) : null;
  const tags = await createTags(db, workspaceId, references.missingTagNames);
  return { company, tagIds: [...references.tagIds, ...tags.ids], createdTagIds: tags.createdIds, events };
}

async function createTags(db: Executor, workspaceId: number, names: string[]): Promise<{ ids: number[]; createdIds: number[] }> {
  if (names.length === 0) return { ids: [], createdIds: [] };
  const created = await insertMissingTags(db, workspaceId, names);
  const raced = created.length < names.length ? await findTagsByNames(db, workspaceId, names) : [];
  return { ids: [...new Set([...created, ...raced].map((tag) => tag.id))], createdIds: created.map((tag) => tag.id) };
}

/** The lead's own columns as the write statements take them. */
function leadValues(lead: PreparedLead, companyId: number | null): LeadValues {
  return {
    name: lead.name,
    ...lead.scalars,
    company_id: companyId,
    emails: lead.emails,
    phones: lead.phones,
    links: lead.links,
    locations: lead.location ? [lead.location] : [],
    custom_fields: lead.customFields,
  };
}

/** What a row's lead is given by the written companies and tags: its company, its tags, the events of companies it created. */
export interface Written {
  companyId: number | null;
  tagIds: readonly number[];
  events: readonly CompanyAnalyzeEvent[];
}

/** What the new-lead statement writes for a row that creates a person (the events of companies it created before its lead.created). */
export const newLeadOf = (workspaceId: number, lead: PreparedLead, written: Written): NewLeadOf => ({
  workspaceId,
  values: leadValues(lead, written.companyId),
  keys: lead.identities,
  tagIds: written.tagIds,
  events: [...written.events, { topic: 'lead.created' }],
  trace: lead.trace,
  source: lead.source,
});

/**
 * What updating the matched lead with a row writes (the merge statement's row), and the row's
 * warnings. Keys another lead already holds stay with that lead: they are not merged in here.
 * Keys the lead itself holds are not claimed again: a key leaves its lead only with it (deleted
 * with the lead, which then is not merged but lost its race), so the claim would change nothing,
 * and on Citus it is a statement of its own.
 */
export function mergeOfRow(
  workspaceId: number,
  match: StrongestMatch,
  lead: PreparedLead,
  matches: readonly IdentityMatch[],
  written: Written,
): { merge: LeadMergeOf; warnings: string[] } {
  const { leadId } = match;
  const warnings = [...lead.warnings];
  const foreign = matches.filter((match) => match.lead_id !== leadId);
  /** The lead holding a match key (a key has at most one), if any. */
  const holderOf = (kind: string, value: string) => matches.find((match) => match.kind === kind && match.value === value)?.lead_id;
  const heldElsewhere = (kind: string, value: string) => (holderOf(kind, value) ?? leadId) !== leadId;
  const emails = lead.emails.filter((email) => !heldElsewhere('email', email));
  const phones = lead.phones.filter((phone) => !lead.identities.some((key) => key.kind === 'phone' && key.label === phone && heldElsewhere('phone', key.value)));
  for (const match of foreign) {
    warnings.push(
      `${match.kind === 'email' ? 'emails' : match.kind === 'phone' ? 'phones' : 'linkedin_url'}: ${match.value} belongs to lead ${match.lead_id} and was not added to this lead.`,
    );
  }
  return {
    merge: {
      workspaceId,
      leadId,
      values: leadValues({ ...lead, emails, phones }, written.companyId),
      fillCompanyOnly: !lead.company?.explicit,
      keys: lead.identities.filter((key) => holderOf(key.kind, key.value) === undefined),
      tagIds: written.tagIds,
      events: written.events,
      trace: lead.trace,
    },
    warnings,
  };
}

/**
 * The company of a row without company.id (contract: "company resolution"). The domain
 * decides: the company holding it is joined; else a domainless company of the payload's name
 * takes it; else a new one is created with it. Without a domain the name alone joins or creates.
 * Race-safe: the unique (workspace_id, domain) index arbitrates domains, and the requests that
 * may create or give a domain to a company of one name take turns on a lock of that name, then
 * read again what the lookup saw.
 */
async function resolveCompany(
  db: Executor,
  workspaceId: number,
  company: PreparedCompany,
  enrich: boolean,
  events: CompanyAnalyzeEvent[],
  lookup: IntakeLookup,
): Promise<{ id: number; created: boolean }> {
  const details = companyDetails(company);
  const hasDetails = companyHasDetails(company);
  const fill = async (id: number) => {
    if (hasDetails) await fillCompany(db, workspaceId, id, details);
    return { id, created: false };
  };

  // The company the row joins as it is: company.id; else the one holding the payload's domain;
  // else, when the payload gives no domain at all, the one named company.name.
  const existingId = company.id ?? (company.domain !== null ? lookup.companyByDomain : lookup.companyByName);
  if (existingId) return fill(existingId);

  const { domain, name } = company;
  if (name) await lockCompanyName(db, workspaceId, name);
  if (!domain) {
    const raced = await findCompanyByName(db, workspaceId, name!);
    if (raced) return fill(raced.id);
  }
  const links = newCompanyLinks(company);
  const status = newCompanyStatus(domain, enrich);
  const analyze = status === 'pending';
  if (domain && name) {
    const adopted = await giveDomainByName(db, workspaceId, name, domain, analyze);
    if (adopted) {
      if (adopted.queued) events.push({ topic: 'company.analyze', payload: { company_id: adopted.id } });
      await fillCompany(db, workspaceId, adopted.id, { ...details, links });
      return { id: adopted.id, created: false };
    }
  }
  const inserted = await insertCompanyIfNew(db, workspaceId, { ...details, links, name: name ?? domain, domain, status });
  if (!inserted) {
    // Another request created the company with this domain a moment ago.
    return fill((await findCompanyByDomain(db, workspaceId, domain!))!.id);
  }
  if (analyze) events.push({ topic: 'company.analyze', payload: { company_id: inserted.id } });
  return { id: inserted.id, created: true };
}

/** A domainless company of this name takes the domain, unless another company holds it by now (then: undefined). */
async function giveDomainByName(db: Executor, workspaceId: number, name: string, domain: string, analyze: boolean) {
  try {
    return await inSavepoint(db, 'company_domain', true, () => giveDomainToNamedCompany(db, workspaceId, name, domain, analyze));
  } catch (error) {
    if (isUniqueViolation(error)) return undefined;
    throw error;
  }
}
