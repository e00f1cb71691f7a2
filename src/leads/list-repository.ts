import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

// The console's lead list: newest first through the (workspace_id, id) index, one page at a
// time from a keyset (the id the last page ended at), so the thousandth page costs what the first does.
// The CSV export reads every page of the same list (export-repository.ts).

export interface LeadListFilter {
  /** Any part of the name, of an email, of the company's name or domain, or a phone's digits. */
  search?: string;
  tagId?: number;
  /** Only leads older than this id (the cursor). */
  before?: number;
  limit: number;
}

const likeContains = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`;

/** Phone identities hold the last 10 digits (src/normalize.ts): a longer number is searched by those. */
const PHONE_KEY_DIGITS = 10;
const MIN_PHONE_DIGITS = 3;

/**
 * The ids among which the page's leads are, for a search: by name, email, phone digits, company
 * name or domain, in one statement whose every part names the workspace. Each way of matching
 * gives only its newest matches after the cursor (with the tag, when filtered by one), as many
 * as the page holds: the page's leads, the newest matches of any way, are among them. So each
 * part may take the plan its term calls for, a trigram index (migration 0020) for a rare term,
 * the newest leads first for a common one (a word most names hold), instead of every match of
 * every way being found, then all but a page thrown away.
 */
function searched(workspaceId: number, search: string, filter: Omit<LeadListFilter, 'search'>) {
  const pattern = likeContains(search);
  const digits = search.replace(/\D/g, '').slice(-PHONE_KEY_DIGITS);
  const newest = (id: string) =>
    sql`${filter.before !== undefined ? sql`AND ${sql.ref(id)} < ${filter.before}` : sql``}
      ${filter.tagId !== undefined ? sql`AND EXISTS (SELECT 1 FROM lead_tags AS t WHERE t.workspace_id = ${workspaceId} AND t.lead_id = ${sql.ref(id)} AND t.tag_id = ${filter.tagId})` : sql``}
      ORDER BY ${sql.ref(id)} DESC LIMIT ${filter.limit + 1}`;
  // DISTINCT: a lead with two matching emails is one lead of the page.
  const byKey = (kind: string, like: string) =>
    sql`UNION ALL (SELECT DISTINCT lead_id FROM lead_identities WHERE workspace_id = ${workspaceId} AND kind = ${kind} AND value LIKE ${like} ${newest('lead_id')})`;
  return sql<boolean>`l.id IN (
    (SELECT id FROM leads WHERE workspace_id = ${workspaceId} AND lower(name) LIKE ${pattern} ${newest('id')})
    ${byKey('email', pattern)}
    ${digits.length >= MIN_PHONE_DIGITS ? byKey('phone', `%${digits}%`) : sql``}
    UNION ALL (SELECT m.id FROM companies AS c JOIN leads AS m ON m.workspace_id = c.workspace_id AND m.company_id = c.id
      WHERE c.workspace_id = ${workspaceId} AND (lower(c.name) LIKE ${pattern} OR c.domain LIKE ${pattern}) ${newest('m.id')}))`;
}

/**
 * A page of the list's leads `l` (with their companies `c`), matching the search and tag and
 * after the cursor, newest first, one more than the page holds: the one home of the list's
 * filter and keyset, which the Leads page and the CSV export each select their columns from.
 */
export function filteredLeadPage(db: Executor, workspaceId: number, filter: LeadListFilter) {
  let query = db
    .selectFrom('leads as l')
    // Every join names the workspace too, so on Citus the whole page reads one shard group.
    .leftJoin('companies as c', (join) => join.onRef('c.workspace_id', '=', 'l.workspace_id').onRef('c.id', '=', 'l.company_id'))
    .where('l.workspace_id', '=', workspaceId);
  const search = filter.search?.trim();
  if (search) query = query.where(searched(workspaceId, search, filter));
  if (filter.tagId !== undefined) {
    const tagId = filter.tagId;
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('lead_tags')
          .whereRef('lead_tags.workspace_id', '=', 'l.workspace_id')
          .whereRef('lead_tags.lead_id', '=', 'l.id')
          .where('lead_tags.tag_id', '=', tagId)
          .select('lead_id'),
      ),
    );
  }
  if (filter.before !== undefined) query = query.where('l.id', '<', filter.before);
  return query.orderBy('l.id', 'desc').limit(filter.limit + 1);
}

/** The page's rows and the cursor of the next page (null on the last). */
export function pageOf<Row extends { id: number }>(rows: Row[], limit: number) {
  return { rows: rows.slice(0, limit), next: rows.length > limit ? rows[limit - 1]!.id : null };
}

/** The statement of a page of the list, built, not run (the bench EXPLAINs it: `--only search`). */
export function leadPageQuery(db: Executor, workspaceId: number, filter: LeadListFilter) {
  return filteredLeadPage(db, workspaceId, filter).select([
    'l.id',
    'l.name',
    'l.job_title',
    'l.stage',
    'l.created_at',
    'c.name as company_name',
    sql<string | null>`l.emails[1]`.as('email'),
  ]);
}

export async function listLeadPage(db: Executor, workspaceId: number, filter: LeadListFilter) {
  return pageOf(await leadPageQuery(db, workspaceId, filter).execute(), filter.limit);
}

/** The id a connector push stored on the lead (the receiver's reply `id`), or null. */
export async function findCrmRecordId(db: Executor, workspaceId: number, leadId: number): Promise<string | null> {
  const row = await db.selectFrom('leads').where('id', '=', leadId).where('workspace_id', '=', workspaceId).select('crm_record_id').executeTakeFirst();
  return row?.crm_record_id ?? null;
}
