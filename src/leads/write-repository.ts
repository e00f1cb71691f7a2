import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { IdentityKind, LinkRow, LocationRow } from '../db/schema.js';
import { appendDistinct } from '../db/sql.js';
import { MAX_EMAILS, MAX_PHONES } from './limits.js';
import { companyJson, leadColumns, tagsWithIds, type LeadRecord } from './read-repository.js';

export interface IdentityMatch { kind: IdentityKind; value: string; lead_id: number }

/**
 * The existing leads of the workspace holding any of these keys (`n`: the key's position,
 * from 1), as a FROM item. One primary-key probe per key, whatever the planner believes about
 * the table: a plain join against the keys lets it hash the whole workspace's keys instead
 * when its statistics are stale (seen right after a bulk import: 60 ms instead of 2).
 */
export function identityMatchRows(workspaceId: number, keys: readonly { kind: IdentityKind; value: string }[]) {
  return sql`(
    SELECT k.n, i.kind, i.value, i.lead_id
    FROM unnest(${sql.val(keys.map((key) => key.kind))}::text[], ${sql.val(keys.map((key) => key.value))}::text[]) WITH ORDINALITY AS k(kind, value, n)
    CROSS JOIN LATERAL (
      SELECT i.kind, i.value, i.lead_id FROM lead_identities AS i
      WHERE i.workspace_id = ${workspaceId} AND i.kind = k.kind AND i.value = k.value
      OFFSET 0
    ) AS i
  )`;
}

/** Every existing lead of the workspace holding any of these keys: one index-bound query. */
export async function findIdentityMatches(db: Executor, workspaceId: number, keys: readonly { kind: IdentityKind; value: string }[]): Promise<IdentityMatch[]> {
  if (keys.length === 0) return [];
  const result = await sql<IdentityMatch>`
    SELECT m.kind, m.value, m.lead_id FROM ${identityMatchRows(workspaceId, keys)} AS m ORDER BY m.n
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

/** The values of a new lead's row after workspace_id, in the column order both inserts use. */
const newLeadColumns = (values: LeadValues) => sql`${values.company_id}, ${values.name}, ${values.job_title ?? null}, ${values.description ?? null},
  ${values.gender ?? null}, ${values.language ?? null}, ${values.decision_maker ?? false}, 'api', 'new', false,
  ${sql.val(values.emails)}::text[], ${sql.val(values.phones)}::text[], ${JSON.stringify(values.links)}::jsonb,
  ${JSON.stringify(values.locations)}::jsonb, ${JSON.stringify(values.custom_fields)}::jsonb`;

/** Match keys as rows `k(kind, value)`. */
const keyRows = (keys: readonly { kind: IdentityKind; value: string }[]) =>
  sql`unnest(${sql.val(keys.map((key) => key.kind))}::text[], ${sql.val(keys.map((key) => key.value))}::text[]) AS k(kind, value)`;

/** Everything a new lead's statement writes: the row, its match keys, its tags and its events. */
export interface NewLeadWrite {
  values: LeadValues;
  keys: readonly { kind: IdentityKind; value: string }[];
  tagIds: readonly number[];
  events: readonly { topic: string; payload: Record<string, unknown> }[];
}

/** Claims the match keys for the lead whose id `owner.id` holds; returns a row per key claimed. */
const claimKeys = (workspaceId: number, owner: 'lead' | 'new_lead', keys: readonly { kind: IdentityKind; value: string }[]) => sql`
  INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
  SELECT ${workspaceId}, k.kind, k.value, ${sql.ref(`${owner}.id`)}
  FROM ${sql.table(owner)}, ${keyRows(keys)}
  ORDER BY k.kind, k.value
  ON CONFLICT (workspace_id, kind, value) DO NOTHING
  RETURNING 1`;

/** The `tagged` and `queued` steps: tags attached and events written for the lead in `owner`, if any. */
const tagsAndEvents = (
  workspaceId: number,
  owner: 'lead' | 'complete',
  tagIds: readonly number[],
  events: readonly { topic: string; payload: Record<string, unknown> }[],
) => sql`tagged AS (
    INSERT INTO lead_tags (lead_id, tag_id)
    SELECT ${sql.ref(`${owner}.id`)}, t.tag_id FROM ${sql.table(owner)}, unnest(${sql.val([...tagIds])}::bigint[]) AS t(tag_id)
    ON CONFLICT DO NOTHING
  ), queued AS (
    INSERT INTO outbox (workspace_id, topic, payload)
    SELECT ${workspaceId}, e.topic, CASE WHEN e.topic LIKE 'lead.%' THEN e.payload || jsonb_build_object('lead_id', ${sql.ref(`${owner}.id`)}) ELSE e.payload END
    FROM ${sql.table(owner)}, unnest(${sql.val(events.map((event) => event.topic))}::text[], ${sql.val(events.map((event) => JSON.stringify(event.payload)))}::jsonb[]) AS e(topic, payload)
  )`;

/**
 * Inserts the lead, claims its match keys, attaches its tags and writes its events in one
 * statement. When a concurrent request claimed one of the keys first, nothing but the lead
 * row is written (`claimed` < keys sent): the caller deletes that row and matches again.
 * It also returns the lead as findLeadRecords would read it right after (its tags are exactly
 * `tagIds`, its company the row the earlier statements of this transaction left), which
 * saves POST /leads the read-back round trip.
 */
export async function insertLeadWithIdentities(db: Executor, workspaceId: number, { values, keys, tagIds, events }: NewLeadWrite): Promise<{ id: number; claimed: number; record: LeadRecord }> {
  const result = await sql<LeadRecord & { claimed: number }>`
    WITH lead AS (
      INSERT INTO leads (workspace_id, company_id, name, job_title, description, gender, language, decision_maker,
        source, stage, chargeable, emails, phones, links, locations, custom_fields)
      VALUES (${workspaceId}, ${newLeadColumns(values)})
      RETURNING *
    ), claimed AS (
      ${claimKeys(workspaceId, 'lead', keys)}
    ), complete AS (
      SELECT lead.id FROM lead WHERE (SELECT count(*) FROM claimed) = ${keys.length}
    ), ${tagsAndEvents(workspaceId, 'complete', tagIds, events)}
    SELECT ${leadColumns('lead')}, (SELECT count(*) FROM claimed)::int AS claimed,
      ${tagsWithIds(tagIds)} AS tags,
      (SELECT ${companyJson('c')} FROM companies AS c WHERE c.id = lead.company_id) AS company
    FROM lead
  `.execute(db);
  const { claimed, ...record } = result.rows[0]!;
  return { id: record.id, claimed, record };
}

/**
 * insertLeadWithIdentities for a statement on its own (autocommit), which must leave nothing
 * behind when a concurrent request claimed one of the keys first. The lead's id is taken
 * first and its keys claimed; the lead row (and its tags and events) is inserted only when
 * every key was claimed. Otherwise the keys claimed point at a lead that does not exist, so
 * the statement fails its foreign key at the end and writes nothing (or, when no key was
 * claimed, inserts nothing). Returns the lead as findLeadRecords reads it, or null when a key
 * was taken.
 */
export async function insertLeadIfKeysFree(db: Executor, workspaceId: number, { values, keys, tagIds, events }: NewLeadWrite): Promise<LeadRecord | null> {
  try {
    const result = await sql<LeadRecord>`
      WITH new_lead AS (
        SELECT nextval(pg_get_serial_sequence('leads', 'id')) AS id
      ), claimed AS (
        ${claimKeys(workspaceId, 'new_lead', keys)}
      ), lead AS (
        INSERT INTO leads (id, workspace_id, company_id, name, job_title, description, gender, language, decision_maker,
          source, stage, chargeable, emails, phones, links, locations, custom_fields)
        OVERRIDING SYSTEM VALUE
        SELECT new_lead.id, ${workspaceId}, ${newLeadColumns(values)}
        FROM new_lead
        WHERE (SELECT count(*) FROM claimed) = ${keys.length}
        RETURNING *
      ), ${tagsAndEvents(workspaceId, 'lead', tagIds, events)}
      SELECT ${leadColumns('lead')},
        ${tagsWithIds(tagIds)} AS tags,
        (SELECT ${companyJson('c')} FROM companies AS c WHERE c.id = lead.company_id) AS company
      FROM lead
    `.execute(db);
    return result.rows[0] ?? null;
  } catch (error) {
    const { code, constraint } = error as { code?: string; constraint?: string };
    if (constraint === 'lead_identities_lead_id_fkey') return null;
    // A deadlock or serialization failure wrote nothing either; the caller's transaction retries.
    if (code === '40P01' || code === '40001') return null;
    throw error;
  }
}

/** Undoes a lead that lost the race for one of its match keys. */
export async function deleteLead(db: Executor, leadId: number): Promise<void> {
  await db.deleteFrom('leads').where('id', '=', leadId).execute();
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
