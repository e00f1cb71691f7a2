import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { CompanyStatus } from '../../generated/api.js';
import type { LinkRow, LocationRow } from '../db/schema.js';
import { appendDistinct } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from '../limits.js';

export function insertCompany(db: Executor, company: {
  workspace_id: number; name: string | null; domain: string | null; status: CompanyStatus; links: LinkRow[];
}) {
  return db.insertInto('companies')
    .values({ ...company, links: JSON.stringify(company.links) })
    .returning(['id', 'name', 'links', 'status'])
    .executeTakeFirstOrThrow();
}

export function findCompanyByDomain(db: Executor, workspaceId: number, domain: string) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('domain', '=', domain).select('id').executeTakeFirst();
}

export async function findCompaniesByDomains(db: Executor, workspaceId: number, domains: readonly string[]) {
  if (domains.length === 0) return [];
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('domain', 'in', [...domains]).select(['id', 'domain']).execute();
}

export function findCompanyByName(db: Executor, workspaceId: number, name: string) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where(sql`lower(name)`, '=', name.toLowerCase())
    .select('id').orderBy('id').limit(1).executeTakeFirst();
}

/**
 * Serializes, within a transaction, the requests that may create or give a domain to a company
 * of this name (a name has no unique key to lean on).
 */
export async function lockCompanyName(db: Executor, workspaceId: number, name: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`company-name:${workspaceId}:${name.toLowerCase()}`}, 0))`.execute(db);
}

/**
 * Gives `domain` to the oldest company named `name` (case-insensitive) that has no domain yet;
 * with `analyze`, a company not analyzed so far becomes pending (`queued`: queue its analysis).
 * Undefined when there is no such company. Fails with a unique violation (23505) when another
 * company holds the domain by now: run it in a savepoint.
 */
export async function giveDomainToNamedCompany(db: Executor, workspaceId: number, name: string, domain: string, analyze: boolean) {
  const { rows } = await sql<{ id: number; queued: boolean }>`
    WITH target AS (
      SELECT id, status FROM companies
      WHERE workspace_id = ${workspaceId} AND lower(name) = ${name.toLowerCase()} AND domain IS NULL
      ORDER BY id LIMIT 1
      FOR UPDATE
    )
    UPDATE companies AS c SET
      domain = ${domain},
      status = CASE WHEN ${analyze} AND target.status = 'not_analyzed' THEN 'pending' ELSE c.status END,
      updated_at = now()
    FROM target WHERE c.id = target.id
    RETURNING c.id, (${analyze} AND target.status = 'not_analyzed') AS queued
  `.execute(db);
  return rows[0];
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

/** What website analysis needs of a company: where its site is, and whether it still waits for it. */
export function findCompanyForAnalysis(db: Executor, workspaceId: number, companyId: number) {
  return db.selectFrom('companies').select(['id', 'domain', 'links', 'status'])
    .where('id', '=', companyId).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/**
 * Stores what a pending company's site said (the payload's description wins; the title names
 * a company that has no real name yet, one named after its domain included) and its status.
 * False when the company is not pending (any more).
 */
export async function finishCompanyAnalysis(
  db: Executor, workspaceId: number, companyId: number, status: 'analyzed' | 'failed', found: { title: string | null; description: string | null },
): Promise<boolean> {
  const { rows } = await sql<{ id: number }>`
    UPDATE companies SET
      status = ${status},
      description = coalesce(description, ${found.description}),
      name = CASE WHEN ${found.title}::text IS NOT NULL AND (name IS NULL OR name = domain) THEN ${found.title} ELSE name END,
      updated_at = now()
    WHERE id = ${companyId} AND workspace_id = ${workspaceId} AND status = 'pending'
    RETURNING id
  `.execute(db);
  return rows.length > 0;
}
