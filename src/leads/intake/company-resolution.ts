import { fillCompany, findCompanyByDomain, findCompanyByName, giveDomainToNamedCompany, insertCompanyIfNew, lockCompanyName } from '../../companies/repository.js';
import { newCompanyStatus, websiteLinkOfDomain } from '../../companies/rules.js';
import type { Executor } from '../../db/connect.js';
import { inSavepoint } from '../../db/savepoint.js';
import { isUniqueViolation } from '../../db/sql.js';
import type { CompanyAnalyzeEvent } from '../../outbox/repository.js';
import type { IntakeLookup } from '../lookup-repository.js';
import { existingCompanyId } from './lookup.js';
import type { PreparedCompany } from './prepare.js';

export interface ResolvedCompany {
  id: number;
  created: boolean;
}

/** What the payload says about the company besides how to find it. */
function companyDetails(company: PreparedCompany) {
  return {
    name: company.name,
    industry: company.industry,
    size: company.size,
    description: company.description,
    links: company.links,
    emails: company.emails,
    phones: company.phones,
    locations: company.location ? [company.location] : [],
  };
}

/** True when the payload carries company details to fill in (not only a way to find the company). */
export function companyHasDetails(company: PreparedCompany): boolean {
  return Object.values(companyDetails(company)).some((value) => (Array.isArray(value) ? value.length > 0 : value !== null));
}

/**
 * The company of a row without company.id (contract: "company resolution"). The domain
 * decides: the company holding it is joined; else a domainless company of the payload's name
 * takes it; else a new one is created with it. Without a domain the name alone joins or creates.
 * Race-safe: the unique (workspace_id, domain) index arbitrates domains, and the requests that
 * may create or give a domain to a company of one name take turns on a lock of that name, then
 * read again what the lookup saw.
 */
export async function resolveCompany(
  db: Executor,
  workspaceId: number,
  company: PreparedCompany,
  enrich: boolean,
  events: CompanyAnalyzeEvent[],
  lookup: IntakeLookup,
): Promise<ResolvedCompany> {
  const details = companyDetails(company);
  const hasDetails = companyHasDetails(company);
  const fill = async (id: number) => {
    if (hasDetails) await fillCompany(db, workspaceId, id, details);
    return { id, created: false };
  };

  const existingId = existingCompanyId(company, lookup);
  if (existingId) return fill(existingId);

  const { domain, name } = company;
  if (name) await lockCompanyName(db, workspaceId, name);
  if (!domain) {
    const raced = await findCompanyByName(db, workspaceId, name!);
    if (raced) return fill(raced.id);
  }
  // A company built from an email domain gets that domain's site as its website.
  const links = company.domainFromEmail ? [websiteLinkOfDomain(domain!), ...details.links] : details.links;
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
