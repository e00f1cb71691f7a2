import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

// The console's lead list: newest first through the (workspace_id, id) index, one page at a
// time from a keyset (the id the last page ended at), so the thousandth page costs what the first does.

export interface LeadListFilter {
  /** An email (exact, case-insensitive, through the identities' primary key) or the start of a name. */
  search?: string;
  tagId?: number;
  /** Only leads older than this id (the cursor). */
  before?: number;
  limit: number;
}

const likePrefix = (text: string) => `${text.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`;

export async function listLeadPage(db: Executor, workspaceId: number, filter: LeadListFilter) {
  let query = db
    .selectFrom('leads as l')
    // Every join names the workspace too, so on Citus the whole page reads one shard group.
    .leftJoin('companies as c', (join) => join.onRef('c.workspace_id', '=', 'l.workspace_id').onRef('c.id', '=', 'l.company_id'))
    .where('l.workspace_id', '=', workspaceId)
    .select(['l.id', 'l.name', 'l.job_title', 'l.stage', 'l.created_at', 'c.name as company_name', sql<string | null>`l.emails[1]`.as('email')]);
  const search = filter.search?.trim();
  if (search && search.includes('@')) {
    const email = search.toLowerCase();
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('lead_identities as i')
          .select('i.lead_id')
          .whereRef('i.workspace_id', '=', 'l.workspace_id')
          .whereRef('i.lead_id', '=', 'l.id')
          .where('i.kind', '=', 'email')
          .where('i.value', '=', email),
      ),
    );
  } else if (search) {
    query = query.where(sql<string>`lower(l.name)`, 'like', likePrefix(search));
  }
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
  const rows = await query
    .orderBy('l.id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  return { leads: rows.slice(0, filter.limit), next: rows.length > filter.limit ? rows[filter.limit - 1]!.id : null };
}

/** The id a connector push stored on the lead (the receiver's reply `id`), or null. */
export async function findCrmRecordId(db: Executor, workspaceId: number, leadId: number): Promise<string | null> {
  const row = await db.selectFrom('leads').where('id', '=', leadId).where('workspace_id', '=', workspaceId).select('crm_record_id').executeTakeFirst();
  return row?.crm_record_id ?? null;
}
