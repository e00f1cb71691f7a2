import { sql } from 'kysely';
import type { components } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import type { LinkRow, LocationRow } from '../db/schema.js';

type Lead = components['schemas']['Lead'];
type Company = components['schemas']['Company'];
type Tag = components['schemas']['Tag'];

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

const tagsOf = (joinTable: 'lead_tags' | 'company_tags', ownerColumn: 'lead_id' | 'company_id', ownerId: ReturnType<typeof sql.ref>) => sql`
  coalesce((
    SELECT json_agg(json_build_object('id', t.id, 'name', t.name, 'color', t.color, 'active', t.active) ORDER BY lower(t.name), t.name, t.id)
    FROM ${sql.table(joinTable)} AS j JOIN tags AS t ON t.id = j.tag_id
    WHERE j.${sql.ref(ownerColumn)} = ${ownerId}
  ), '[]'::json)`;

// One round trip for the whole Lead output: the lead row, its tags, its company and the
// company's tags. Confined to the workspace so a foreign id reads exactly like a missing one.
export async function findLeadRecords(db: Executor, workspaceId: number, ids: readonly number[]): Promise<LeadRecord[]> {
  if (ids.length === 0) return [];
  const result = await sql<LeadRecord>`
    SELECT l.id, l.name, l.job_title, l.description, l.gender, l.language, l.decision_maker, l.stage, l.source,
      l.emails, l.phones, l.links, l.locations, l.custom_fields, l.created_at, l.updated_at,
      ${tagsOf('lead_tags', 'lead_id', sql.ref('l.id'))} AS tags,
      CASE WHEN c.id IS NULL THEN NULL ELSE json_build_object(
        'id', c.id, 'name', c.name, 'industry', c.industry, 'size', c.size, 'description', c.description,
        'status', c.status, 'links', c.links, 'created_at', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'tags', ${tagsOf('company_tags', 'company_id', sql.ref('c.id'))}
      ) END AS company
    FROM leads AS l
    LEFT JOIN companies AS c ON c.id = l.company_id
    WHERE l.workspace_id = ${workspaceId} AND l.id = ANY(${sql.val([...ids])}::bigint[])
  `.execute(db);
  return result.rows;
}
