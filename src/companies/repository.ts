import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { CompanyStatus, LinkRow, LocationRow } from '../db/schema.js';
import { appendDistinct } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from '../leads/limits.js';

export function insertCompany(db: Executor, company: {
  workspace_id: number; name: string | null; domain: string | null; status: CompanyStatus; links: LinkRow[];
}) {
  return db.insertInto('companies')
    .values({ ...company, links: JSON.stringify(company.links) })
    .returning(['id', 'name', 'links', 'status'])
    .executeTakeFirstOrThrow();
}

export function companyBelongsTo(db: Executor, workspaceId: number, companyId: number) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('id', '=', companyId).select('id').executeTakeFirst();
}

export function findCompanyByDomain(db: Executor, workspaceId: number, domain: string) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('domain', '=', domain).select('id').executeTakeFirst();
}

export function findCompanyByName(db: Executor, workspaceId: number, name: string) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where(sql`lower(name)`, '=', name.toLowerCase())
    .select('id').orderBy('id').limit(1).executeTakeFirst();
}

/** Serializes creation of name-only companies (no unique key to lean on) within a transaction. */
export async function lockCompanyName(db: Executor, workspaceId: number, name: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`company-name:${workspaceId}:${name.toLowerCase()}`}, 0))`.execute(db);
}

export interface CompanyDetails {
  name: string | null;
  domain: string | null;
  industry: string | null;
  size: string | null;
  description: string | null;
  status: CompanyStatus;
  links: LinkRow[];
  emails: string[];
  phones: string[];
  locations: LocationRow[];
}

/** Inserts unless a company with this domain exists (then returns nothing: look it up). */
export function insertCompanyIfNew(db: Executor, workspaceId: number, details: CompanyDetails) {
  return db.insertInto('companies')
    .values({
      workspace_id: workspaceId,
      ...details,
      links: JSON.stringify(details.links),
      locations: JSON.stringify(details.locations),
    })
    .onConflict((oc) => oc.expression(sql`workspace_id, domain`).where('domain', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
}

/** Fills what the company does not have yet; never overwrites. */
export function fillCompany(db: Executor, companyId: number, details: Omit<CompanyDetails, 'status' | 'domain'>) {
  return db.updateTable('companies')
    .set({
      name: sql`coalesce(name, ${details.name})`,
      industry: sql`coalesce(industry, ${details.industry})`,
      size: sql`coalesce(size, ${details.size})`,
      description: sql`coalesce(description, ${details.description})`,
      links: sql`links || coalesce((SELECT jsonb_agg(n) FROM jsonb_array_elements(${JSON.stringify(details.links)}::jsonb) AS n
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(links) AS o WHERE o->>'type' = n->>'type')), '[]'::jsonb)`,
      emails: appendDistinct('emails', details.emails, MAX_EMAILS),
      phones: appendDistinct('phones', details.phones, MAX_PHONES),
      locations: sql`CASE WHEN jsonb_array_length(locations) = 0 THEN ${JSON.stringify(details.locations)}::jsonb ELSE locations END`,
      updated_at: sql`now()`,
    })
    .where('id', '=', companyId)
    .execute();
}
