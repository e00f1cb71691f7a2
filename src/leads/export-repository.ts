import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import { filteredLeadPage, pageOf, type LeadListFilter } from './list-repository.js';

// The CSV export's reads: a page of the lead list (its filter and keyset) in one statement that
// gives each lead's cells as the export writes them, the lists joined and the first location and
// links picked by PostgreSQL, instead of the list's page and then each lead as the API reads it.
// A lead's tags come as their ids, named by the service from the workspace's tags: a lookup of
// the lead's own rows of lead_tags, where a join with tags may be planned (without statistics)
// as a scan of every tag of the workspace for each lead.

/** Lists of values (emails, phones, tag names) are joined into one cell with this. */
export const CELL_LIST_SEPARATOR = '; ';

/** A text value as a cell: '' for NULL. */
const cellText = (value: RawBuilder<unknown>) => sql<string>`coalesce(${value}, '')`;

/** The URL of the first link of `type` in the links `links` (a jsonb array): what `firstLink` gives, in SQL. */
const firstLinkUrl = (links: string, type: 'linkedin' | 'website') =>
  cellText(sql`jsonb_path_query_first(${sql.ref(links)}, ${`$[*] ? (@.type == "${type}").url`}::jsonpath) #>> '{}'`);

/** A field of the lead's first location (the API's `location`). */
const locationField = (field: 'country' | 'state' | 'city') => cellText(sql`l.locations -> 0 ->> ${field}`);

/** The statement of a page of the export, built, not run. */
export function leadExportPageQuery(db: Executor, workspaceId: number, filter: LeadListFilter) {
  return filteredLeadPage(db, workspaceId, filter).select([
    'l.id',
    'l.name',
    sql<string>`array_to_string(l.emails, ${CELL_LIST_SEPARATOR})`.as('emails'),
    sql<string>`array_to_string(l.phones, ${CELL_LIST_SEPARATOR})`.as('phones'),
    firstLinkUrl('l.links', 'linkedin').as('linkedin_url'),
    cellText(sql.ref('l.job_title')).as('job_title'),
    'l.stage',
    'l.source',
    sql<string>`array_to_string(ARRAY(SELECT j.tag_id FROM lead_tags AS j WHERE j.workspace_id = ${workspaceId} AND j.lead_id = l.id), ',')`.as('tag_ids'),
    locationField('country').as('country'),
    locationField('state').as('state'),
    locationField('city').as('city'),
    cellText(sql.ref('c.name')).as('company_name'),
    firstLinkUrl('c.links', 'website').as('company_website'),
    cellText(sql.ref('c.industry')).as('company_industry'),
    cellText(sql.ref('c.size')).as('company_size'),
    'l.created_at',
    'l.updated_at',
    'l.custom_fields',
  ]);
}

export type LeadExportRow = Awaited<ReturnType<ReturnType<typeof leadExportPageQuery>['execute']>>[number];

/** A page of the export: its leads' rows and the cursor of the next page (null on the last). */
export async function listLeadExportPage(db: Executor, workspaceId: number, filter: LeadListFilter) {
  return pageOf(await leadExportPageQuery(db, workspaceId, filter).execute(), filter.limit);
}

/** The keys of custom fields the workspace's leads hold, sorted: the export's columns. */
export async function customFieldKeys(db: Executor, workspaceId: number): Promise<string[]> {
  const { rows } = await sql<{ key: string }>`
    SELECT DISTINCT jsonb_object_keys(custom_fields) AS key FROM leads WHERE workspace_id = ${workspaceId} AND custom_fields <> '{}'::jsonb ORDER BY 1`.execute(db);
  return rows.map((row) => row.key);
}
