import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { fillCompanies, findCompaniesByDomains, type CompanyFill } from '../../companies/repository.js';
import type { Executor } from '../../db/connect.js';
import { findTagsByNames } from '../../tags/repository.js';
import type { IntakeLookup } from '../lookup-repository.js';
import { insertCompaniesAndTags } from '../new-leads-repository.js';
import type { References } from './match.js';
import { companyDetails, companyHasDetails, type PreparedLead } from './prepare.js';
import type { Written } from './row-intake.js';

// The companies of rows written by set statements: how the planner (plan.ts) decides a row's
// company may be written by one, and what the executor writes for a statement's rows before
// their leads (executor-steps.ts, writeStatement).

/**
 * How a row written by a set statement gets its company: an existing one (with the details the
 * row fills in, `fill`), the one holding `domain` once an earlier row of its run, alone, created
 * it (with the details the row fills in), one to create by domain, or none.
 */
export type SetCompany = { id: number; fill?: CompanyFill } | { domain: string; fill: CompanyFill } | { newDomain: string } | null;

/**
 * The company rule of set statements: the row's company is none, or is named by company.id, or
 * is the one holding the payload's domain (its website's, else its email's), which the row
 * fills in with its company details as a row alone would; or, without details, the business
 * domain of the person's email names a company to create with that domain exactly as a row
 * alone would. A new company with details (its name's rules) runs the row alone; a later row
 * of the run with details for the same domain (`created`: the domains such rows alone create)
 * fills in the company it made, as it would alone, reading its lookup after it. Undefined when
 * the row does not qualify.
 */
export function setCompany(lead: PreparedLead, view: IntakeLookup, created: ReadonlySet<string>): SetCompany | undefined {
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) {
    const id = company.id ?? (company.domain !== null ? view.companyByDomain : null);
    if (id !== null) return { id, fill: companyDetails(company) };
    return company.domain !== null && created.has(company.domain) ? { domain: company.domain, fill: companyDetails(company) } : undefined;
  }
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return view.companyByDomain !== null ? { id: view.companyByDomain } : { newDomain: company.domain };
}

const newDomainOf = (row: { company: SetCompany }) => (row.company && 'newDomain' in row.company ? row.company.newDomain : null);

/**
 * What a statement's rows need written before their leads: the companies (by domain) and tags
 * (by name) that do not exist yet, in one statement, in the order of their unique keys, so two
 * transactions creating the same ones wait for each other instead of deadlocking; the first row
 * naming a new company fires its analysis; then the details rows fill in existing companies
 * with, in one statement (the planner gives a company one set of details per run). Returns what
 * each row's lead is given.
 */
export async function writeCompaniesAndTags(
  db: Executor,
  workspaceId: number,
  rows: ReadonlyArray<{ company: SetCompany; references: References }>,
  enrich: boolean,
): Promise<Written[]> {
  const domains = [...new Set(rows.flatMap((row) => newDomainOf(row) ?? []))].sort();
  // Companies rows alone of the run created before this statement: found by their domains.
  const madeByRowsAlone = [...new Set(rows.flatMap(({ company }) => (company && 'domain' in company ? [company.domain] : [])))];
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of rows) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const companyIds = new Map<string, number>();
  const tagIds = new Map<string, number>();
  const analyzed = new Map<number, CompanyAnalyzeEvent[]>();
  if (domains.length > 0 || missingTags.size > 0) {
    const tagNames = [...missingTags.keys()].sort().map((lowered) => missingTags.get(lowered)!);
    const { created, tags } = await insertCompaniesAndTags(db, workspaceId, domains, tagNames, enrich);
    for (const company of created) companyIds.set(company.domain, company.id);
    for (const tag of tags) tagIds.set(tag.name.toLowerCase(), tag.id);
    const unresolvedTags = [...missingTags.keys()].filter((name) => !tagIds.has(name));
    for (const tag of await findTagsByNames(db, workspaceId, unresolvedTags)) tagIds.set(tag.name.toLowerCase(), tag.id);
    const creator = new Map(created.filter((company) => company.status === 'pending').map((company) => [company.domain, company.id]));
    rows.forEach((row, position) => {
      const id = creator.get(newDomainOf(row)!);
      if (id === undefined) return;
      creator.delete(newDomainOf(row)!);
      analyzed.set(position, [{ topic: 'company.analyze', payload: { company_id: id } }]);
    });
  }
  // In one read: the new companies a concurrent request created a moment ago, and those rows alone of the run created.
  const unresolvedDomains = [...new Set([...domains.filter((domain) => !companyIds.has(domain)), ...madeByRowsAlone])];
  for (const company of await findCompaniesByDomains(db, workspaceId, unresolvedDomains)) companyIds.set(company.domain!, company.id);
  const idOf = (company: Exclude<SetCompany, null>) => ('id' in company ? company.id : companyIds.get('domain' in company ? company.domain : company.newDomain));
  const fills = new Map<number, CompanyFill>();
  for (const { company } of rows) {
    if (!company || !('fill' in company) || !company.fill) continue;
    const id = idOf(company);
    if (id !== undefined && !fills.has(id)) fills.set(id, company.fill);
  }
  await fillCompanies(
    db,
    workspaceId,
    [...fills].map(([id, details]) => ({ id, details })),
  );
  return rows.map((row, position) => {
    const companyId = row.company === null ? null : idOf(row.company);
    if (companyId === undefined) throw new Error(`company for ${newDomainOf(row) ?? JSON.stringify(row.company)} could not be resolved`);
    const tags = [...row.references.tagIds, ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!)];
    return { companyId, tagIds: tags, events: analyzed.get(position) ?? [] };
  });
}
