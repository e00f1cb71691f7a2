import { sql, type OnConflictBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { Database } from '../db/schema.js';
import { appendDistinct, jsonParameter } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from '../limits.js';
import type { CompanyDetails } from './columns.js';
import { newCompanyStatus, websiteLinkOfDomain } from './rules.js';

/** A new company: who it is and its status; a detail left out starts empty. */
export type NewCompany = Pick<CompanyDetails, 'name' | 'domain' | 'status'> & Partial<CompanyDetails>;

/** The one INSERT of companies, in the order given. Built, not run: callers add their conflict rule and what they read back. */
function companiesInsert(db: Executor, workspaceId: number, companies: readonly NewCompany[]) {
  return db.insertInto('companies').values(
    companies.map((company) => ({
      workspace_id: workspaceId,
      ...company,
      links: company.links && jsonParameter(company.links),
      locations: company.locations && jsonParameter(company.locations),
    })),
  );
}

/** A company whose domain another company holds by now is not inserted (nothing is returned for it). */
const unlessDomainHeld = (oc: OnConflictBuilder<Database, 'companies'>) =>
  oc
    .expression(sql`workspace_id, domain`)
    .where('domain', 'is not', null)
    .doNothing();

/** One company as an operator creates it; fails with a unique violation (23505) when another company holds its domain. */
export function insertCompany(db: Executor, company: NewCompany & { workspace_id: number }) {
  const { workspace_id: workspaceId, ...values } = company;
  return companiesInsert(db, workspaceId, [values]).returning(['id', 'name', 'links', 'status']).executeTakeFirstOrThrow();
}

export function findCompanyByDomain(db: Executor, workspaceId: number, domain: string) {
  return db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('domain', '=', domain).select('id').executeTakeFirst();
}

export async function findCompaniesByDomains(db: Executor, workspaceId: number, domains: readonly string[]) {
  if (domains.length === 0) return [];
  return db
    .selectFrom('companies')
    .where('workspace_id', '=', workspaceId)
    .where('domain', 'in', [...domains])
    .select(['id', 'domain'])
    .execute();
}

export function findCompanyByName(db: Executor, workspaceId: number, name: string) {
  return db
    .selectFrom('companies')
    .where('workspace_id', '=', workspaceId)
    .where(sql`lower(name)`, '=', name.toLowerCase())
    .select('id')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/**
 * Serializes, within a transaction, the requests that may create or give a domain to a company
 * of these names (a name has no unique key to lean on); several names in the order of their
 * keys, so two transactions locking some of the same names wait for each other, not deadlock.
 */
export async function lockCompanyNames(db: Executor, workspaceId: number, names: readonly string[]): Promise<void> {
  const keys = [...new Set(names.map((name) => `company-name:${workspaceId}:${name.toLowerCase()}`))].sort();
  if (keys.length === 0) return;
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(k.key, 0)) FROM unnest(${keys}::text[]) AS k(key)`.execute(db);
}

export const lockCompanyName = (db: Executor, workspaceId: number, name: string) => lockCompanyNames(db, workspaceId, [name]);

/**
 * Gives each `domain` to the oldest company named `name` (case-insensitive) that has no domain
 * yet, unless a company holds the domain already; with `analyze`, a company not analyzed so far
 * becomes pending (`queued`: queue its analysis). Returns the companies that took a domain; the
 * names must differ. Fails with a unique violation (23505) when a company not yet committed
 * holds a domain: run it in a savepoint, or as a set statement that may fail as a whole.
 */
export async function giveDomainsToNamedCompanies(db: Executor, workspaceId: number, wanted: ReadonlyArray<{ name: string; domain: string; analyze: boolean }>) {
  if (wanted.length === 0) return [];
  const rows = wanted.map(({ name, domain, analyze }) => ({ name: name.toLowerCase(), domain, queue_analysis: analyze }));
  const { rows: given } = await sql<{ id: number; domain: string; queued: boolean }>`
    WITH target AS (
      SELECT w.domain, w.queue_analysis, t.id, t.status
      FROM jsonb_to_recordset(${jsonParameter(rows)}::jsonb) AS w(name text, domain text, queue_analysis boolean)
      CROSS JOIN LATERAL (
        SELECT id, status FROM companies
        WHERE workspace_id = ${workspaceId} AND lower(name) = w.name AND domain IS NULL
        ORDER BY id LIMIT 1
        FOR UPDATE
      ) AS t
      WHERE NOT EXISTS (SELECT 1 FROM companies AS h WHERE h.workspace_id = ${workspaceId} AND h.domain = w.domain)
    )
    UPDATE companies AS c SET
      domain = target.domain,
      status = CASE WHEN target.queue_analysis AND target.status = 'not_analyzed' THEN 'pending' ELSE c.status END,
      updated_at = now()
    FROM target WHERE c.workspace_id = ${workspaceId} AND c.id = target.id
    RETURNING c.id, c.domain, (target.queue_analysis AND target.status = 'not_analyzed') AS queued
  `.execute(db);
  return given;
}

/** One company of that name takes the domain (giveDomainsToNamedCompanies); undefined when none does. */
export const giveDomainToNamedCompany = async (db: Executor, workspaceId: number, name: string, domain: string, analyze: boolean) =>
  (await giveDomainsToNamedCompanies(db, workspaceId, [{ name, domain, analyze }]))[0];

/** Inserts, in the order given, each company whose domain no company holds (returns those inserted: look the others up). */
export function insertCompaniesIfNew(db: Executor, workspaceId: number, companies: readonly CompanyDetails[]) {
  return companiesInsert(db, workspaceId, companies).onConflict(unlessDomainHeld).returning(['id', 'domain', 'status']).execute();
}

/** Inserts unless a company with this domain exists (then returns nothing: look it up). */
export const insertCompanyIfNew = async (db: Executor, workspaceId: number, details: CompanyDetails) => (await insertCompaniesIfNew(db, workspaceId, [details]))[0];

/**
 * The statement that creates, in the order given, a company for each of these domains of
 * people's emails (named after it, its site as website, its status as intake gives a new
 * company), returning the ones no other company held. Built, not run: a caller may run it
 * inside a larger statement. `domains` must not be empty.
 */
export function companiesOfDomainsInsert(db: Executor, workspaceId: number, domains: readonly string[], enrich: boolean) {
  return companiesInsert(
    db,
    workspaceId,
    domains.map((domain) => ({
      name: domain,
      domain,
      status: newCompanyStatus(domain, enrich),
      links: [websiteLinkOfDomain(domain)],
    })),
  )
    .onConflict(unlessDomainHeld)
    .returning(['id', 'domain', 'status']);
}

/** Company details to fill in, as fillCompanies takes them. */
export type CompanyFill = Omit<CompanyDetails, 'status' | 'domain'>;

/**
 * Fills what each company does not have yet; never overwrites. A company the details would not
 * change is left alone (no new row version, no row lock, its updated_at kept), so concurrent
 * writers naming the same companies do not queue behind each other's commits. Each company
 * once: a company's fills in a row's order are the caller's to give one at a time.
 */
export async function fillCompanies(db: Executor, workspaceId: number, fills: ReadonlyArray<{ id: number; details: CompanyFill }>): Promise<void> {
  if (fills.length === 0) return;
  const rows = [...fills]
    .sort((a, b) => a.id - b.id)
    .map(({ id, details }) => ({
      id,
      name: details.name,
      industry: details.industry,
      size: details.size,
      description: details.description,
      links: details.links,
      emails: details.emails,
      phones: details.phones,
      locations: details.locations,
    }));
  // Written against the target row (c), so a row another writer changed meanwhile is filled from its newest version.
  const filled = {
    name: sql`coalesce(c.name, f.name)`,
    industry: sql`coalesce(c.industry, f.industry)`,
    size: sql`coalesce(c.size, f.size)`,
    description: sql`coalesce(c.description, f.description)`,
    links: sql`c.links || coalesce((SELECT jsonb_agg(n) FROM jsonb_array_elements(f.links) AS n
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(c.links) AS o WHERE o->>'type' = n->>'type')), '[]'::jsonb)`,
    emails: appendDistinct('c.emails', sql`f.emails`, MAX_EMAILS),
    phones: appendDistinct('c.phones', sql`f.phones`, MAX_PHONES),
    locations: sql`CASE WHEN jsonb_array_length(c.locations) = 0 THEN f.locations ELSE c.locations END`,
  };
  const columns = Object.keys(filled) as Array<keyof typeof filled>;
  await sql`
    UPDATE companies AS c SET ${sql.join(columns.map((column) => sql`${sql.ref(column)} = ${filled[column]}`))}, updated_at = now()
    FROM (
      SELECT f.id, f.name, f.industry, f.size, f.description, f.links, f.locations,
        ARRAY(SELECT jsonb_array_elements_text(f.emails)) AS emails, ARRAY(SELECT jsonb_array_elements_text(f.phones)) AS phones
      FROM jsonb_to_recordset(${jsonParameter(rows)}::jsonb) AS f(id bigint, name text, industry text, size text, description text, links jsonb, emails jsonb, phones jsonb, locations jsonb)
    ) AS f
    WHERE c.workspace_id = ${workspaceId} AND c.id = f.id
      AND (${sql.join(columns.map((column) => sql.ref(`c.${column}`)))}) IS DISTINCT FROM (${sql.join(columns.map((column) => filled[column]))})`.execute(db);
}

/** Fills what the company does not have yet; never overwrites. */
export const fillCompany = (db: Executor, workspaceId: number, companyId: number, details: CompanyFill) => fillCompanies(db, workspaceId, [{ id: companyId, details }]);

/** What website analysis needs of a company: where its site is, and whether it still waits for it. */
export function findCompanyForAnalysis(db: Executor, workspaceId: number, companyId: number) {
  return db.selectFrom('companies').select(['id', 'domain', 'links', 'status']).where('id', '=', companyId).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/**
 * Stores what a pending company's site said (the payload's description wins; the title names
 * a company that has no real name yet, one named after its domain included) and its status.
 * False when the company is not pending (any more).
 */
export async function finishCompanyAnalysis(
  db: Executor,
  workspaceId: number,
  companyId: number,
  status: 'analyzed' | 'failed',
  found: { title: string | null; description: string | null },
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

/** A workspace's companies, newest first, `limit` of them before the id `before` (a keyset page). */
export function listCompanies(db: Executor, workspaceId: number, page: { limit: number; before?: number }) {
  let query = db.selectFrom('companies').where('workspace_id', '=', workspaceId);
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  return query.select(['id', 'name', 'domain', 'status', 'created_at']).orderBy('id', 'desc').limit(page.limit).execute();
}
