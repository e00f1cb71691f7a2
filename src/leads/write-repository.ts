import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { LeadRow } from '../db/schema.js';
import { appendDistinct, jsonParameter } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from '../limits.js';
import type { LeadValues } from './columns.js';
import type { MatchKey } from './lookup-repository.js';

// The statements that change existing leads (new leads: new-leads-repository.ts).

/** Undoes leads that lost the race for one of their match keys (their claimed keys go with them). */
export async function deleteLeads(db: Executor, workspaceId: number, leadIds: readonly number[]): Promise<void> {
  if (leadIds.length === 0) return;
  await db
    .deleteFrom('leads')
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...leadIds])
    .execute();
}

/**
 * Claims match keys for a lead. Keys already held by another lead are skipped and returned
 * nothing for; sorted so concurrent claims lock in one order.
 */
export async function claimIdentities(db: Executor, workspaceId: number, leadId: number, keys: readonly MatchKey[]) {
  if (keys.length === 0) return [];
  const sorted = [...keys].sort((a, b) => (a.kind + a.value < b.kind + b.value ? -1 : 1));
  return db
    .insertInto('lead_identities')
    .values(sorted.map((key) => ({ workspace_id: workspaceId, kind: key.kind, value: key.value, lead_id: leadId })))
    .onConflict((oc) => oc.columns(['workspace_id', 'kind', 'value']).doNothing())
    .returning(['kind', 'value'])
    .execute();
}

export function lockLead(db: Executor, workspaceId: number, leadId: number) {
  return db.selectFrom('leads').where('workspace_id', '=', workspaceId).where('id', '=', leadId).select(['id', 'company_id']).forUpdate().executeTakeFirstOrThrow();
}

/** Merges an update: provided scalars overwrite, lists gain what they lack, location fills gaps. */
export function mergeIntoLead(db: Executor, workspaceId: number, leadId: number, lead: LeadValues & { fillCompanyOnly: boolean }) {
  const {
    name,
    company_id: companyId,
    emails,
    phones,
    links,
    locations: [location],
    custom_fields: customFields,
    fillCompanyOnly,
    ...scalars
  } = lead;
  return db
    .updateTable('leads')
    .set({
      name,
      ...scalars,
      ...(companyId != null ? { company_id: fillCompanyOnly ? sql`coalesce(company_id, ${companyId})` : companyId } : {}),
      emails: appendDistinct('emails', emails, MAX_EMAILS),
      phones: appendDistinct('phones', phones, MAX_PHONES),
      links: sql`links || coalesce((SELECT jsonb_agg(n) FROM jsonb_array_elements(${jsonParameter(links)}::jsonb) AS n
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(links) AS o WHERE o->>'url' = n->>'url')), '[]'::jsonb)`,
      locations: location
        ? // The list built here, not with jsonb_build_array (STABLE): Citus refuses a non-immutable function in a CASE of an UPDATE.
          sql`CASE WHEN jsonb_array_length(locations) = 0 THEN ${jsonParameter([location])}::jsonb
            ELSE jsonb_set(locations, '{0}', jsonb_strip_nulls(${jsonParameter(location)}::jsonb) || jsonb_strip_nulls(locations->0)) END`
        : sql`locations`,
      custom_fields: sql`custom_fields || ${jsonParameter(customFields)}::jsonb`,
      updated_at: sql`now()`,
    })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', leadId)
    .execute();
}

/** Attaches tags and returns the ids that were not attached before. */
export async function attachTags(db: Executor, workspaceId: number, leadId: number, tagIds: readonly number[]): Promise<number[]> {
  if (tagIds.length === 0) return [];
  const inserted = await db
    .insertInto('lead_tags')
    .values(tagIds.map((tagId) => ({ workspace_id: workspaceId, lead_id: leadId, tag_id: tagId })))
    .onConflict((oc) => oc.columns(['lead_id', 'tag_id', 'workspace_id']).doNothing())
    .returning('tag_id')
    .execute();
  return inserted.map((row) => row.tag_id);
}

export type LeadRef = Pick<LeadRow, 'id' | 'workspace_id'>;

/**
 * Marks leads analyzed unless their company's website analysis is still pending; returns
 * only the leads this call moved, so each lead is auto-pushed once however events interleave.
 */
export async function markLeadsAnalyzed(db: Executor, workspaceId: number, leadIds: readonly number[]): Promise<LeadRef[]> {
  if (leadIds.length === 0) return [];
  const result = await sql<LeadRef>`
    UPDATE leads AS l SET analyzed_at = now()
    WHERE l.workspace_id = ${workspaceId} AND l.id = ANY(${sql.val([...leadIds])}::bigint[]) AND l.analyzed_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM companies AS c WHERE c.workspace_id = ${workspaceId} AND c.id = l.company_id AND c.status = 'pending')
    RETURNING l.id, l.workspace_id
  `.execute(db);
  return result.rows;
}

/** Marks the not yet analyzed leads of a company analyzed (its analysis finished); returns them. */
export async function markCompanyLeadsAnalyzed(db: Executor, workspaceId: number, companyId: number): Promise<LeadRef[]> {
  const result = await sql<LeadRef>`
    UPDATE leads SET analyzed_at = now()
    WHERE workspace_id = ${workspaceId} AND company_id = ${companyId} AND analyzed_at IS NULL
    RETURNING id, workspace_id
  `.execute(db);
  return result.rows;
}
