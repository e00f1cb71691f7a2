import { sql } from 'kysely';
import type { Company, Lead, Tag } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import type { LinkRow, LocationRow } from '../db/schema.js';
import { PreparedStatement } from '../db/prepared.js';
import { apiTimestamp } from '../db/sql.js';

/** A stored tag: the API's Tag with an id that is never null. */
export type TagJson = Omit<Tag, 'id'> & { id: number };

/** The company as stored: links not yet split into website / linkedin_url. */
export type CompanyJson = Omit<Company, 'id' | 'website' | 'linkedin_url' | 'status' | 'tags'> & {
  id: number;
  status: string;
  links: LinkRow[];
  tags: TagJson[];
};

/** The lead as stored: every location (the API shows the first), the company row as JSON. */
export type LeadRecord = Omit<Lead, 'id' | 'stage' | 'links' | 'location' | 'tags' | 'company'> & {
  id: number;
  stage: string;
  links: LinkRow[];
  locations: LocationRow[];
  tags: TagJson[];
  company: CompanyJson | null;
};

/** The tag row `t` as a lead record lists it, and the order of a record's tags. */
export const TAG_JSON = sql`json_build_object('id', t.id, 'name', t.name, 'color', t.color, 'active', t.active)`;
export const TAG_ORDER = sql`lower(t.name), t.name, t.id`;

const tagsOf = (joinTable: 'lead_tags' | 'company_tags', ownerColumn: 'lead_id' | 'company_id', ownerId: ReturnType<typeof sql.ref>) => sql`
  coalesce((
    SELECT json_agg(${TAG_JSON} ORDER BY ${TAG_ORDER})
    FROM ${sql.table(joinTable)} AS j JOIN tags AS t ON t.id = j.tag_id
    WHERE j.${sql.ref(ownerColumn)} = ${ownerId}
  ), '[]'::json)`;

/** The company row `c` as a lead record embeds it (NULL when the join found none). */
export const companyJson = (company: string) => {
  const c = (column: string) => sql.ref(`${company}.${column}`);
  return sql`CASE WHEN ${c('id')} IS NULL THEN NULL ELSE json_build_object(
    'id', ${c('id')}, 'name', ${c('name')}, 'industry', ${c('industry')}, 'size', ${c('size')}, 'description', ${c('description')},
    'status', ${c('status')}, 'links', ${c('links')}, 'created_at', ${apiTimestamp(c('created_at'))},
    'tags', ${tagsOf('company_tags', 'company_id', c('id'))}
  ) END`;
};

/** The lead columns of a lead record, read from the row (or RETURNING of) `lead`. */
export const leadColumns = (lead: string) => sql.join(
  ['id', 'name', 'job_title', 'description', 'gender', 'language', 'decision_maker', 'stage', 'source',
    'emails', 'phones', 'links', 'locations', 'custom_fields', 'created_at', 'updated_at'].map((column) => sql.ref(`${lead}.${column}`)),
);

// One round trip for the whole Lead output: the lead row, its tags, its company and the
// company's tags. Confined to the workspace so a foreign id reads exactly like a missing one.
export const LEAD_RECORDS = new PreparedStatement<{ workspaceId: number; ids: number[] }, LeadRecord>((input) => sql`
  SELECT ${leadColumns('l')},
    ${tagsOf('lead_tags', 'lead_id', sql.ref('l.id'))} AS tags,
    ${companyJson('c')} AS company
  FROM leads AS l
  LEFT JOIN companies AS c ON c.id = l.company_id
  WHERE l.workspace_id = ${input.workspaceId} AND l.id = ANY(${input.ids}::bigint[])
`);

export async function findLeadRecords(db: Executor, workspaceId: number, ids: readonly number[]): Promise<LeadRecord[]> {
  if (ids.length === 0) return [];
  return LEAD_RECORDS.execute(db, { workspaceId, ids: [...ids] });
}
