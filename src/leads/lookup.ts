import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { PreparedCompany, PreparedLead } from './prepare.js';
import type { TagJson } from './read-repository.js';
import { identityMatchRows, type IdentityMatch } from './write-repository.js';

/** Everything an intake row reads before it writes, fetched in one round trip. */
export interface IntakeLookup {
  /** Tags of the workspace with any of the payload's tag ids or (case-insensitive) names. */
  tags: TagJson[];
  /** Existing leads of the workspace holding any of the payload's match keys. */
  matches: IdentityMatch[];
  /** The payload's company.id when it belongs to the workspace. */
  companyById: number | null;
  /** The company with the domain of company.website. */
  companyByWebsiteDomain: number | null;
  /** The company with the business domain of the person's email (when it differs from the website's). */
  companyByEmailDomain: number | null;
  /** The oldest company with company.name (case-insensitive). */
  companyByName: number | null;
}

/** The workspace's tags with any of these ids or (case-insensitive) names, as a JSON array. */
export const referencedTags = (workspaceId: number, ids: readonly number[], names: readonly string[]) => sql`
  (SELECT coalesce(json_agg(json_build_object('id', id, 'name', name, 'color', color, 'active', active)), '[]'::json)
    FROM tags
    WHERE workspace_id = ${workspaceId}
      AND (id = ANY(${sql.val([...new Set(ids)])}::bigint[]) OR lower(name) = ANY(${sql.val([...new Set(names.map((name) => name.toLowerCase()))])}::text[])))`;

/** The company an intake row joins without creating one: company.id, then website domain, email domain, name. */
export const existingCompanyId = (company: PreparedCompany, lookup: IntakeLookup): number | null =>
  company.id ?? lookup.companyByWebsiteDomain ?? lookup.companyByEmailDomain ?? lookup.companyByName;

/**
 * The reads of one intake row as one statement: tag references, identity matches and the
 * company candidates. Each part is the query the row would otherwise send on its own (same
 * predicates, same indexes); a part with nothing to look for finds nothing.
 */
export async function lookupForIntake(db: Executor, workspaceId: number, lead: PreparedLead): Promise<IntakeLookup> {
  const company = lead.company;
  const emailDomain = company?.emailDomain && company.emailDomain !== company.websiteDomain ? company.emailDomain : null;
  const { rows } = await sql<IntakeLookup>`
    SELECT
      ${referencedTags(workspaceId, lead.tagIds, lead.tagNames)} AS tags,
      (SELECT coalesce(json_agg(json_build_object('kind', m.kind, 'value', m.value, 'lead_id', m.lead_id) ORDER BY m.n), '[]'::json)
        FROM ${identityMatchRows(workspaceId, lead.identities)} AS m
      ) AS matches,
      (SELECT id FROM companies WHERE workspace_id = ${workspaceId} AND id = ${company?.id ?? null}::bigint) AS "companyById",
      (SELECT id FROM companies WHERE workspace_id = ${workspaceId} AND domain = ${company?.websiteDomain ?? null}::text) AS "companyByWebsiteDomain",
      (SELECT id FROM companies WHERE workspace_id = ${workspaceId} AND domain = ${emailDomain}::text) AS "companyByEmailDomain",
      (SELECT id FROM companies WHERE workspace_id = ${workspaceId} AND lower(name) = ${company?.name?.toLowerCase() ?? null}::text
        ORDER BY id LIMIT 1) AS "companyByName"
  `.execute(db);
  return rows[0]!;
}
