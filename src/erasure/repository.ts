import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { IdentityKind } from '../db/schema.js';
import { jsonParameter } from '../db/sql.js';

// The statements of an erasure (src/erasure/service.ts) that no other feature has: finding a
// person's leads, and removing the copies of their data outside the leads' own rows (delivery
// bodies and replies, stored answers, the company made from them; their pending events:
// src/outbox/erased-events-repository.ts). Every statement names the workspace, so on Citus
// each runs on the workspace's node.

/** A person as an operator names them: a lead id, or a contact detail as its normalized match key. */
export type PersonKey = { kind: 'id'; id: number } | { kind: IdentityKind; value: string };

export async function findPersonLeads(db: Executor, workspaceId: number, person: PersonKey): Promise<number[]> {
  const rows =
    person.kind === 'id'
      ? await db.selectFrom('leads').select('id').where('workspace_id', '=', workspaceId).where('id', '=', person.id).execute()
      : await db
          .selectFrom('lead_identities')
          .select('lead_id as id')
          .where('workspace_id', '=', workspaceId)
          .where('kind', '=', person.kind)
          .where('value', '=', person.value)
          .execute();
  return [...new Set(rows.map((row) => Number(row.id)))].sort((a, b) => a - b);
}

/** What an erasure needs of each lead before it goes: its CRM record id, company, contact details and match keys. */
export interface ErasedLead {
  id: number;
  crm_record_id: string | null;
  company_id: number | null;
  emails: string[];
  phones: string[];
  links: Array<{ url: string }>;
  identities: Array<{ kind: IdentityKind; value: string }>;
}

export async function lockErasedLeads(db: Executor, workspaceId: number, leadIds: readonly number[]): Promise<ErasedLead[]> {
  if (leadIds.length === 0) return [];
  const { rows } = await sql<ErasedLead>`
    SELECT l.id::int AS id, l.crm_record_id, l.company_id::int AS company_id, l.emails, l.phones, l.links,
      coalesce((SELECT jsonb_agg(jsonb_build_object('kind', i.kind, 'value', i.value) ORDER BY i.kind, i.value)
        FROM lead_identities AS i WHERE i.workspace_id = ${workspaceId} AND i.lead_id = l.id), '[]'::jsonb) AS identities
    FROM leads AS l
    WHERE l.workspace_id = ${workspaceId} AND l.id = ANY(${[...leadIds]}::bigint[])
    ORDER BY l.id
    FOR UPDATE OF l
  `.execute(db);
  return rows;
}

/**
 * The endpoints that received each lead: a connector (its pushes and the Saved-connector blocks
 * that used it) or a workflow's Custom URL, that answered at least one attempt of a delivery of
 * the lead (an answer means the request arrived).
 */
export async function receivingEndpoints(
  db: Executor,
  workspaceId: number,
  leadIds: readonly number[],
): Promise<Array<{ lead_id: number; connector_id: number | null; workflow_id: number | null }>> {
  const { rows } = await sql<{ lead_id: number; connector_id: number | null; workflow_id: number | null }>`
    SELECT DISTINCT d.lead_id::int AS lead_id, d.connector_id::int AS connector_id, CASE WHEN d.connector_id IS NULL THEN d.workflow_id::int END AS workflow_id
    FROM deliveries AS d
    WHERE d.workspace_id = ${workspaceId} AND d.lead_id = ANY(${[...leadIds]}::bigint[]) AND d.sender NOT IN ('test', 'erasure_notice')
      AND EXISTS (SELECT 1 FROM delivery_attempts AS a WHERE a.workspace_id = ${workspaceId} AND a.delivery_id = d.id AND a.status_code IS NOT NULL)
    ORDER BY 1, 2, 3
  `.execute(db);
  return rows;
}

export const TOMBSTONE_NOTE = 'The lead was erased: the request and replies of this delivery are no longer kept.';

/**
 * Turns the leads' deliveries into tombstones: ids, endpoint, status, times and attempt count
 * stay; the request (body, headers, a Custom URL as rendered with merge tags: the block's
 * template instead), the reply and the error texts (a receiver's words) go. A pending one is
 * finished as Failed, never sent. Returns how many.
 */
export async function tombstoneDeliveries(db: Executor, workspaceId: number, leadIds: readonly number[]): Promise<number> {
  // The pending ones are finished in a statement of their own: Citus refuses now() inside CASE
  // in a distributed UPDATE.
  await sql`
    UPDATE deliveries SET branch = 'Failed', finished_at = now()
    WHERE workspace_id = ${workspaceId} AND lead_id = ANY(${[...leadIds]}::bigint[]) AND sender <> 'erasure_notice' AND branch = 'pending'
  `.execute(db);
  const { rows } = await sql<{ id: number }>`
    UPDATE deliveries AS d SET
      body = NULL, reply = NULL, headers = '[]'::jsonb, error = ${TOMBSTONE_NOTE}, locked_by = NULL, locked_until = NULL,
      url = CASE WHEN d.sender = 'custom_url' THEN (SELECT coalesce(min(w.block->>'url'), '') FROM workflows AS w WHERE w.workspace_id = ${workspaceId} AND w.id = d.workflow_id) ELSE d.url END
    WHERE d.workspace_id = ${workspaceId} AND d.lead_id = ANY(${[...leadIds]}::bigint[]) AND d.sender <> 'erasure_notice'
    RETURNING d.id
  `.execute(db);
  if (rows.length > 0) {
    await sql`
      UPDATE delivery_attempts SET reply = NULL, error = NULL
      WHERE workspace_id = ${workspaceId} AND delivery_id = ANY(${rows.map((row) => row.id)}::bigint[])
    `.execute(db);
  }
  return rows.length;
}

/**
 * Whether a stored Idempotency-Key answer holds one of the leads: a lead object (it has a
 * `stage`) or a batch row (it has an `index`) of one of the ids, or any text equal to one of the
 * person's contact details (`matched_on`, a dry run's lead).
 */
function holdsPerson(leadIds: readonly number[], details: readonly string[]) {
  const vars = jsonParameter({ ids: [...leadIds], texts: [...details] });
  return sql<boolean>`response_body IS NOT NULL AND (
    jsonb_path_exists(response_body, '$.** ? ((exists(@.stage) && @.id == $ids[*]) || (exists(@.index) && @.lead_id == $ids[*]))', ${vars}::jsonb)
    OR jsonb_path_exists(response_body, '$.** ? (@ == $texts[*])', ${vars}::jsonb))`;
}

/** The stored answers that hold the person (holdsPerson), for their export. */
export async function answersHolding(db: Executor, workspaceId: number, leadIds: readonly number[], details: readonly string[]) {
  const { rows } = await sql<{ key: string; status_code: number | null; response_body: unknown; created_at: string }>`
    SELECT key, status_code, response_body, created_at FROM idempotency_records
    WHERE workspace_id = ${workspaceId} AND ${holdsPerson(leadIds, details)}
    ORDER BY created_at
  `.execute(db);
  return rows;
}

/** Deletes the stored answers that hold the person (holdsPerson): a retry under such a key runs afresh. */
export async function deleteAnswersHolding(db: Executor, workspaceId: number, leadIds: readonly number[], details: readonly string[]): Promise<number> {
  const { rows } = await sql<{ key: string }>`
    DELETE FROM idempotency_records WHERE workspace_id = ${workspaceId} AND ${holdsPerson(leadIds, details)}
    RETURNING key
  `.execute(db);
  return rows.length;
}

/**
 * The companies of the erased leads that were made from the person alone: no lead of the
 * workspace belongs to them any more, no tag is attached, and their domain is the domain of one
 * of the person's email addresses (what the intake creates a company from). They are deleted
 * (their pending analysis with them: deleteCompanyAnalyses). Returns the ids deleted.
 */
export async function deletePersonsCompanies(db: Executor, workspaceId: number, companyIds: readonly number[], emailDomains: readonly string[]): Promise<number[]> {
  if (companyIds.length === 0 || emailDomains.length === 0) return [];
  const { rows } = await sql<{ id: number }>`
    DELETE FROM companies AS c
    WHERE c.workspace_id = ${workspaceId} AND c.id = ANY(${[...companyIds]}::bigint[]) AND c.domain = ANY(${[...emailDomains]}::text[])
      AND NOT EXISTS (SELECT 1 FROM leads AS l WHERE l.workspace_id = ${workspaceId} AND l.company_id = c.id)
      AND NOT EXISTS (SELECT 1 FROM company_tags AS t WHERE t.workspace_id = ${workspaceId} AND t.company_id = c.id)
    RETURNING c.id::int AS id
  `.execute(db);
  return rows.map((row) => row.id);
}

/** Removes the person's addresses and numbers from the contact lists of the companies that stay. */
export async function removeContactsFromCompanies(
  db: Executor,
  workspaceId: number,
  companyIds: readonly number[],
  emails: readonly string[],
  phones: readonly string[],
): Promise<void> {
  if (companyIds.length === 0) return;
  await sql`
    UPDATE companies SET
      emails = ARRAY(SELECT e FROM unnest(emails) AS e WHERE lower(e) <> ALL(${[...emails]}::text[])),
      phones = ARRAY(SELECT p FROM unnest(phones) AS p WHERE p <> ALL(${[...phones]}::text[]))
    WHERE workspace_id = ${workspaceId} AND id = ANY(${[...companyIds]}::bigint[])
  `.execute(db);
}
