import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { fillCompanies, findCompaniesByDomains, giveDomainsToNamedCompanies, insertCompaniesIfNew, lockCompanyNames, type CompanyFill } from '../../companies/repository.js';
import { newCompanyStatus } from '../../companies/rules.js';
import type { Executor } from '../../db/connect.js';
import { findTagsByNames } from '../../tags/repository.js';
import type { IntakeLookup } from '../lookup-repository.js';
import { insertCompaniesAndTags } from '../new-leads-repository.js';
import type { References } from './match.js';
import { companyDetails, companyHasDetails, newCompanyLinks, type PreparedCompany, type PreparedLead } from './prepare.js';
import type { Written } from './row-intake.js';

// The companies of rows written by set statements: how the planner (plan.ts) decides a row's
// company may be written by one, and what the executor writes for a statement's rows before
// their leads (executor-steps.ts, writeStatement).

/**
 * How a row written by a set statement gets its company: an existing one (with the details the
 * row fills in, `fill`), the one holding `domain` once an earlier row of its run created it
 * (with the details the row fills in), one to create by domain (`newDomain`, of an email), a new
 * company with details to resolve by its domain and name as a row alone would (`newCompany`),
 * or none.
 */
export type SetCompany =
  | { id: number; fill?: CompanyFill }
  | { domain: string; fill: CompanyFill }
  | { newDomain: string }
  | { newCompany: PreparedCompany & { domain: string } }
  | null;

/**
 * The company rule of set statements: the row's company is none, or is named by company.id, or
 * is the one holding the payload's domain (its website's, else its email's), which the row
 * fills in with its company details as a row alone would; or a new company with details and a
 * domain, which the statement resolves by its name's rules as a row alone would (the first row
 * of its domain in the run: a later row with details for the same domain, `created`, fills in
 * the company it made); or, without details, the business domain of the person's email names a
 * company to create with that domain exactly as a row alone would. Undefined when the row does
 * not qualify (details without a domain: found by name).
 */
export function setCompany(lead: PreparedLead, view: IntakeLookup, created: ReadonlySet<string>): SetCompany | undefined {
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) {
    const id = company.id ?? (company.domain !== null ? view.companyByDomain : null);
    if (id !== null) return { id, fill: companyDetails(company) };
    if (company.domain === null) return undefined;
    return created.has(company.domain) ? { domain: company.domain, fill: companyDetails(company) } : { newCompany: { ...company, domain: company.domain } };
  }
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return view.companyByDomain !== null ? { id: view.companyByDomain } : { newDomain: company.domain };
}

/** The details a row's company is filled in or created with, and the company they go to (its id, or its domain): none without details. */
export function detailsOf(company: SetCompany): { key: number | string; details: CompanyFill } | null {
  if (company === null) return null;
  if ('newCompany' in company) return { key: company.newCompany.domain, details: companyDetails(company.newCompany) };
  if (!('fill' in company) || !company.fill) return null;
  return { key: 'id' in company ? company.id : company.domain, details: company.fill };
}

/**
 * New companies with details and a domain, each as a row alone resolves it (resolveCompany,
 * row-intake.ts), set-based: under the locks of their names, a domainless company of the name
 * takes the domain (and is filled in); else a company is inserted with the details; a company
 * that holds the domain by now (another request's) is looked up and filled in by the caller.
 * Returns the ids found, the analysis events of the companies made, and the fills to add.
 */
async function createCompanies(db: Executor, workspaceId: number, companies: ReadonlyArray<PreparedCompany & { domain: string }>, enrich: boolean) {
  const names = companies.flatMap((company) => company.name ?? []);
  await lockCompanyNames(db, workspaceId, names);
  const named = companies.flatMap(({ name, domain }) => (name ? [{ name, domain, analyze: newCompanyStatus(domain, enrich) === 'pending' }] : []));
  const given = new Map((await giveDomainsToNamedCompanies(db, workspaceId, named)).map((company) => [company.domain, company]));
  const rest = companies.filter((company) => !given.has(company.domain));
  const inserted =
    rest.length === 0
      ? []
      : await insertCompaniesIfNew(
          db,
          workspaceId,
          rest.map((company) => ({
            ...companyDetails(company),
            links: newCompanyLinks(company),
            name: company.name ?? company.domain,
            domain: company.domain,
            status: newCompanyStatus(company.domain, enrich),
          })),
        );
  const made = new Map(inserted.map((company) => [company.domain!, company]));
  const ids = new Map<string, number>();
  const analyzed = new Set<string>();
  const fills: Array<{ domain: string; details: CompanyFill | null }> = [];
  for (const company of companies) {
    const adopted = given.get(company.domain);
    const insert = made.get(company.domain);
    if (adopted) ids.set(company.domain, adopted.id);
    if (insert) ids.set(company.domain, insert.id);
    if ((adopted && adopted.queued) || insert?.status === 'pending') analyzed.add(company.domain);
    // Inserted with its details: nothing to fill. Adopted: filled with them, its email's site too. Held by now: filled with the details alone.
    fills.push({ domain: company.domain, details: insert ? null : adopted ? { ...companyDetails(company), links: newCompanyLinks(company) } : companyDetails(company) });
  }
  return { ids, analyzed, fills };
}

const newDomainOf = (row: { company: SetCompany }) => (row.company && 'newDomain' in row.company ? row.company.newDomain : null);

/**
 * What a statement's rows need written before their leads: the companies of email domains and
 * the tags (by name) that do not exist yet, in one statement, and the new companies with
 * details (createCompanies), the two in the order of their first rows; each in the order of
 * their unique keys, so two transactions creating the same ones wait for each other instead of
 * deadlocking; the first row naming a new company fires its analysis; then the details rows
 * fill in existing companies with, in one statement (the planner gives a company one set of
 * details per run). Returns what each row's lead is given.
 */
export async function writeCompaniesAndTags(
  db: Executor,
  workspaceId: number,
  rows: ReadonlyArray<{ company: SetCompany; references: References }>,
  enrich: boolean,
): Promise<Written[]> {
  const firstOfDomain = new Map<string, number>();
  rows.forEach(
    ({ company }, position) => company && 'newCompany' in company && !firstOfDomain.has(company.newCompany.domain) && firstOfDomain.set(company.newCompany.domain, position),
  );
  // An email's domain that a new company with details takes (an earlier row's) is that company's.
  const domains = [...new Set(rows.flatMap((row) => newDomainOf(row) ?? []))].filter((domain) => !firstOfDomain.has(domain)).sort();
  const newCompanies = [...firstOfDomain.values()].map((position) => (rows[position]!.company as { newCompany: PreparedCompany & { domain: string } }).newCompany);
  // Companies earlier rows of the run created before this statement: found by their domains.
  const madeEarlier = [...new Set(rows.flatMap(({ company }) => (company && 'domain' in company ? [company.domain] : [])))];
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of rows) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const companyIds = new Map<string, number>();
  const tagIds = new Map<string, number>();
  const analyzed = new Map<number, CompanyAnalyzeEvent[]>();
  const analyze = (position: number, companyId: number) => analyzed.set(position, [{ topic: 'company.analyze', payload: { company_id: companyId } }]);
  const fills = new Map<number, CompanyFill | null>();
  const createByEmail = async () => {
    if (domains.length === 0 && missingTags.size === 0) return;
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
      analyze(position, id);
    });
  };
  const createNew = () =>
    newCompanies.length > 0
      ? createCompanies(
          db,
          workspaceId,
          newCompanies.sort((a, b) => (a.domain < b.domain ? -1 : 1)),
          enrich,
        )
      : Promise.resolve(null);
  // The two kinds in the order of their first rows, as rows one by one would create them (within a kind, by domain).
  const firstByEmail = rows.findIndex((row) => domains.includes(newDomainOf(row) ?? ''));
  const namedFirst = firstOfDomain.size > 0 && (firstByEmail < 0 || Math.min(...firstOfDomain.values()) < firstByEmail);
  let made: Awaited<ReturnType<typeof createNew>> = null;
  if (namedFirst) made = await createNew();
  await createByEmail();
  if (!namedFirst) made = await createNew();
  for (const [domain, id] of made?.ids ?? []) {
    companyIds.set(domain, id);
    if (made!.analyzed.has(domain)) analyze(firstOfDomain.get(domain)!, id);
  }
  // In one read: the new companies a concurrent request created a moment ago, and those earlier rows of the run created.
  const unresolvedDomains = [...new Set([...domains, ...firstOfDomain.keys()].filter((domain) => !companyIds.has(domain)).concat(madeEarlier))];
  for (const company of await findCompaniesByDomains(db, workspaceId, unresolvedDomains)) companyIds.set(company.domain!, company.id);
  const idOf = (company: Exclude<SetCompany, null>) =>
    'id' in company ? company.id : companyIds.get('domain' in company ? company.domain : 'newDomain' in company ? company.newDomain : company.newCompany.domain);
  for (const { domain, details } of made?.fills ?? []) {
    const id = companyIds.get(domain);
    if (id !== undefined) fills.set(id, details);
  }
  for (const { company } of rows) {
    const fill = company && !('newCompany' in company) ? detailsOf(company) : null;
    const id = fill && idOf(company!);
    if (fill && id !== undefined && id !== null && !fills.has(id)) fills.set(id, fill.details);
  }
  await fillCompanies(
    db,
    workspaceId,
    [...fills].flatMap(([id, details]) => (details ? [{ id, details }] : [])),
  );
  return rows.map((row, position) => {
    const companyId = row.company === null ? null : idOf(row.company);
    if (companyId === undefined) throw new Error(`company for ${newDomainOf(row) ?? JSON.stringify(row.company)} could not be resolved`);
    const tags = [...row.references.tagIds, ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!)];
    return { companyId, tagIds: tags, events: analyzed.get(position) ?? [] };
  });
}
