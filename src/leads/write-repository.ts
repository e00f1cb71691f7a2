import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { IdentityKind, LinkRow, LocationRow } from '../db/schema.js';
import { appendDistinct } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from './limits.js';

export interface IdentityMatch { kind: IdentityKind; value: string; lead_id: number }

/** Every existing lead of the workspace holding any of these keys: one index-bound query. */
export async function findIdentityMatches(db: Executor, workspaceId: number, keys: readonly { kind: IdentityKind; value: string }[]): Promise<IdentityMatch[]> {
  if (keys.length === 0) return [];
  const result = await sql<IdentityMatch>`
    SELECT i.kind, i.value, i.lead_id
    FROM lead_identities AS i
    JOIN unnest(${sql.val(keys.map((key) => key.kind))}::text[], ${sql.val(keys.map((key) => key.value))}::text[]) AS k(kind, value)
      ON i.kind = k.kind AND i.value = k.value
    WHERE i.workspace_id = ${workspaceId}
  `.execute(db);
  return result.rows;
}

/**
 * Claims match keys for a lead. Keys already held by another lead are skipped and returned
 * nothing for; sorted so concurrent claims lock in one order.
 */
export async function claimIdentities(db: Executor, workspaceId: number, leadId: number, keys: readonly { kind: IdentityKind; value: string }[]) {
  if (keys.length === 0) return [];
  const sorted = [...keys].sort((a, b) => (a.kind + a.value < b.kind + b.value ? -1 : 1));
  return db.insertInto('lead_identities')
    .values(sorted.map((key) => ({ workspace_id: workspaceId, kind: key.kind, value: key.value, lead_id: leadId })))
    .onConflict((oc) => oc.columns(['workspace_id', 'kind', 'value']).doNothing())
    .returning(['kind', 'value'])
    .execute();
}

export interface LeadValues {
  name: string;
  job_title?: string;
  description?: string;
  gender?: string;
  language?: string;
  decision_maker?: boolean;
  company_id: number | null;
  emails: string[];
  phones: string[];
  links: LinkRow[];
  locations: LocationRow[];
  custom_fields: Record<string, string>;
}

export function insertLead(db: Executor, workspaceId: number, values: LeadValues) {
  return db.insertInto('leads')
    .values({
      workspace_id: workspaceId,
      ...values,
      source: 'api',
      stage: 'new',
      chargeable: false,
      links: JSON.stringify(values.links),
      locations: JSON.stringify(values.locations),
      custom_fields: JSON.stringify(values.custom_fields),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

export function lockLead(db: Executor, leadId: number) {
  return db.selectFrom('leads').where('id', '=', leadId).select(['id', 'company_id']).forUpdate().executeTakeFirstOrThrow();
}

/** Merges an update: provided scalars overwrite, lists gain what they lack, location fills gaps. */
export function mergeIntoLead(db: Executor, leadId: number, values: Omit<LeadValues, 'company_id'> & { company_id?: number | null; fillCompanyOnly: boolean }) {
  const location = values.locations[0];
  return db.updateTable('leads')
    .set({
      name: values.name,
      ...(values.job_title !== undefined ? { job_title: values.job_title } : {}),
      ...(values.description !== undefined ? { description: values.description } : {}),
      ...(values.gender !== undefined ? { gender: values.gender } : {}),
      ...(values.language !== undefined ? { language: values.language } : {}),
      ...(values.decision_maker !== undefined ? { decision_maker: values.decision_maker } : {}),
      ...(values.company_id != null
        ? { company_id: values.fillCompanyOnly ? sql`coalesce(company_id, ${values.company_id})` : values.company_id }
        : {}),
      emails: appendDistinct('emails', values.emails, MAX_EMAILS),
      phones: appendDistinct('phones', values.phones, MAX_PHONES),
      links: sql`links || coalesce((SELECT jsonb_agg(n) FROM jsonb_array_elements(${JSON.stringify(values.links)}::jsonb) AS n
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(links) AS o WHERE o->>'url' = n->>'url')), '[]'::jsonb)`,
      locations: location
        ? sql`CASE WHEN jsonb_array_length(locations) = 0 THEN jsonb_build_array(${JSON.stringify(location)}::jsonb)
            ELSE jsonb_set(locations, '{0}', jsonb_strip_nulls(${JSON.stringify(location)}::jsonb) || jsonb_strip_nulls(locations->0)) END`
        : sql`locations`,
      custom_fields: sql`custom_fields || ${JSON.stringify(values.custom_fields)}::jsonb`,
      updated_at: sql`now()`,
    })
    .where('id', '=', leadId)
    .execute();
}

/** Attaches tags and returns the ids that were not attached before. */
export async function attachTags(db: Executor, leadId: number, tagIds: readonly number[]): Promise<number[]> {
  if (tagIds.length === 0) return [];
  const inserted = await db.insertInto('lead_tags')
    .values(tagIds.map((tagId) => ({ lead_id: leadId, tag_id: tagId })))
    .onConflict((oc) => oc.columns(['lead_id', 'tag_id']).doNothing())
    .returning('tag_id')
    .execute();
  return inserted.map((row) => row.tag_id);
}
