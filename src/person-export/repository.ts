import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { IdentityKind } from '../db/schema.js';

// What a person's export reads beyond the lead as the API reads it (src/person-export/service.ts):
// their match keys, tag links, company row, and every delivery that carried them with its attempts.

export async function identitiesOf(db: Executor, workspaceId: number, leadIds: readonly number[]) {
  const { rows } = await sql<{ lead_id: number; kind: IdentityKind; value: string }>`
    SELECT lead_id::int AS lead_id, kind, value FROM lead_identities
    WHERE workspace_id = ${workspaceId} AND lead_id = ANY(${[...leadIds]}::bigint[])
    ORDER BY lead_id, kind, value
  `.execute(db);
  return rows;
}

export async function tagLinksOf(db: Executor, workspaceId: number, leadIds: readonly number[]) {
  const { rows } = await sql<{ lead_id: number; tag_id: number; name: string; linked_at: string }>`
    SELECT lt.lead_id::int AS lead_id, lt.tag_id::int AS tag_id, t.name, lt.created_at AS linked_at
    FROM lead_tags AS lt JOIN tags AS t ON t.workspace_id = lt.workspace_id AND t.id = lt.tag_id
    WHERE lt.workspace_id = ${workspaceId} AND lt.lead_id = ANY(${[...leadIds]}::bigint[])
    ORDER BY lt.lead_id, lt.tag_id
  `.execute(db);
  return rows;
}

export async function companiesOf(db: Executor, workspaceId: number, companyIds: readonly number[]) {
  if (companyIds.length === 0) return [];
  return db
    .selectFrom('companies')
    .select(['id', 'name', 'domain', 'industry', 'size', 'description', 'status', 'links', 'emails', 'phones', 'locations', 'created_at', 'updated_at'])
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...companyIds])
    .orderBy('id')
    .execute();
}

/** Every delivery of the leads (credential headers left out: they are the receiver's, not the person's), with its attempts. */
export async function deliveriesOf(db: Executor, workspaceId: number, leadIds: readonly number[]) {
  const { rows } = await sql<Record<string, unknown> & { lead_id: number }>`
    SELECT d.id::int AS id, d.lead_id::int AS lead_id, d.event, d.sender, d.trigger, d.connector_id::int AS connector_id, d.workflow_id::int AS workflow_id,
      d.message_id, d.url, d.method, d.content_type, d.body, d.branch, d.status_code, d.error, d.reply, d.created_at, d.finished_at,
      coalesce((SELECT jsonb_agg(jsonb_build_object('series', a.series, 'attempt', a.attempt, 'status_code', a.status_code, 'error', a.error, 'reply', a.reply,
        'duration_ms', a.duration_ms, 'at', a.created_at) ORDER BY a.series, a.attempt)
        FROM delivery_attempts AS a WHERE a.workspace_id = d.workspace_id AND a.delivery_id = d.id), '[]'::jsonb) AS attempts
    FROM deliveries AS d
    WHERE d.workspace_id = ${workspaceId} AND d.lead_id = ANY(${[...leadIds]}::bigint[])
    ORDER BY d.id
  `.execute(db);
  return rows;
}
