import { sql, type RawBuilder } from 'kysely';
import { companyJson } from '../companies/columns.js';
import { companiesOfDomainsInsert } from '../companies/repository.js';
import type { Executor } from '../db/connect.js';
import { PreparedStatement, type Placeholders } from '../db/prepared.js';
import type { CompanyRow, TagRow } from '../db/schema.js';
import { jsonParameter, type JsonbParameter } from '../db/sql.js';
import { newLeadEventInputs, newLeadEvents, type NewLeadEvent, type NewLeadEventInputs } from '../outbox/repository.js';
import { tagJson, tagOrder } from '../tags/columns.js';
import { missingTagsInsert } from '../tags/repository.js';
import { leadColumns, NEW_LEAD_COLUMNS, type LeadRecord, type LeadValues } from './columns.js';
import type { MatchKey } from './lookup-repository.js';

// The statements that create leads: every new lead is written by the one new-lead statement,
// after the companies and tags a batch's new leads need.

/** Everything the new-lead statement writes for one lead: the row, its match keys, its tags and its events. */
export interface NewLeadWrite {
  values: LeadValues;
  keys: readonly MatchKey[];
  tagIds: readonly number[];
  events: readonly NewLeadEvent[];
}

/** A lead the statement wrote: complete when it claimed every match key it was given. */
export interface WrittenLead {
  ord: number;
  id: number;
  complete: boolean;
}

const ROW_SOURCE_COLUMNS = sql.raw(['ord int', 'key_count int', ...NEW_LEAD_COLUMNS.flatMap(([column, type]) => (type ? [`${column} ${type}`] : []))].join(', '));
const INSERTED_COLUMNS = sql.raw(NEW_LEAD_COLUMNS.map(([column]) => column).join(', '));
const INSERTED_VALUES = sql.raw(NEW_LEAD_COLUMNS.map(([, , value]) => value).join(', '));

/**
 * The one statement that writes new leads: each lead's row, its match keys, its tags and its
 * events, ids taken from the sequence in the leads' order. A lead is complete when it claimed
 * every key it was given (a concurrent request may have taken one since the lookup); only
 * complete leads get their tags and events.
 *
 * It runs inside a transaction and inserts every lead row: the caller deletes the
 * incomplete ones and matches them again.
 * With `records`, each row of the answer is also the lead as findLeadRecords reads it right
 * after (its tags exactly the ones given, its company as the transaction sees it).
 */
function newLeadsStatement<Row extends WrittenLead>(options: { records: boolean; named: boolean }) {
  // The records read companies and tags through CTEs of their own, never a subquery correlated
  // with the written rows: Citus runs the final SELECT over the CTEs' results on the coordinator.
  const answer = options.records
    ? sql`ids.ord, complete.id IS NOT NULL AS complete, ${leadColumns('lead')},
        coalesce((SELECT json_agg(tr.tag ORDER BY tr.position) FROM tag_records AS tr
          WHERE tr.id IN (SELECT tag_id FROM tag_rows WHERE tag_rows.ord = ids.ord)), '[]'::json) AS tags,
        (SELECT cr.company FROM company_records AS cr WHERE cr.id = lead.company_id) AS company
      FROM ids LEFT JOIN complete USING (ord) LEFT JOIN lead ON lead.id = ids.id`
    : sql`ids.ord, ids.id, complete.id IS NOT NULL AS complete FROM ids LEFT JOIN complete USING (ord)`;
  const records = (input: Placeholders<NewLeadsInput>) =>
    options.records
      ? sql`, company_records AS (
      SELECT c.id, ${companyJson('c', input.workspaceId)} AS company FROM companies AS c
      WHERE c.workspace_id = ${input.workspaceId} AND c.id IN (SELECT company_id FROM r)
    ), tag_records AS (
      SELECT t.id, ${tagJson('t')} AS tag, row_number() OVER (ORDER BY ${tagOrder('t')}) AS position FROM tags AS t
      WHERE t.workspace_id = ${input.workspaceId} AND t.id IN (SELECT tag_id FROM tag_rows)
    )`
      : sql``;
  return new PreparedStatement<NewLeadsInput, Row>(
    (input) => sql`
    WITH r AS (
      SELECT * FROM jsonb_to_recordset(${input.rows}::jsonb) AS r(${ROW_SOURCE_COLUMNS})
    ), ids AS (
      SELECT r.ord, nextval(pg_get_serial_sequence('leads', 'id')) AS id FROM r ORDER BY r.ord
    ), lead AS (
      INSERT INTO leads (id, workspace_id, ${INSERTED_COLUMNS})
      OVERRIDING SYSTEM VALUE
      SELECT ids.id, ${input.workspaceId}, ${INSERTED_VALUES}
      FROM r JOIN ids USING (ord)
      ORDER BY r.ord
      RETURNING *
    ), claimed AS (
      ${claimMatchKeys(input, sql`ids`)}
      RETURNING lead_id
    ), claimed_count AS (
      SELECT lead_id, count(*) AS n FROM claimed GROUP BY lead_id
    ), complete AS (
      SELECT ids.ord, ids.id FROM ids JOIN r USING (ord) LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
      WHERE r.key_count = coalesce(c.n, 0)
    ), tag_rows AS (
      SELECT * FROM unnest(${input.tagOrds}::int[], ${input.tagIds}::bigint[]) AS t(ord, tag_id)
    ), tagged AS (
      INSERT INTO lead_tags (workspace_id, lead_id, tag_id)
      SELECT ${input.workspaceId}, complete.id, tag_rows.tag_id FROM tag_rows JOIN complete USING (ord)
      ON CONFLICT DO NOTHING
    ), queued AS (
      ${newLeadEvents(input.workspaceId, 'complete', input)}
    )${records(input)}
    SELECT ${answer}
    ORDER BY ids.ord`,
    { named: options.named },
  );
}

/**
 * The parameters of a set statement over a run's lead rows (new leads here, merges in
 * write-repository.ts): the rows as JSON text, and each row's match keys, tags and events by its
 * `ord`, the row's place in the run.
 */
export type LeadRowsInput = {
  workspaceId: number;
  rows: JsonbParameter;
  keyOrds: number[];
  keyKinds: string[];
  keyValues: string[];
  tagOrds: number[];
  tagIds: number[];
} & NewLeadEventInputs;

/** The parameters of the new-lead statements: each row with `ord`, `key_count` and the lead values. */
export type NewLeadsInput = LeadRowsInput;

/**
 * Claims each row's match keys for its lead (`leads`: a CTE of the run's leads with `ord` and
 * `id`), in key order so that concurrent runs take their locks alike; a key another lead holds
 * stays with it.
 */
export function claimMatchKeys(input: Placeholders<LeadRowsInput>, leads: RawBuilder<unknown>) {
  return sql`INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
      SELECT ${input.workspaceId}, k.kind, k.value, ${leads}.id
      FROM unnest(${input.keyOrds}::int[], ${input.keyKinds}::text[], ${input.keyValues}::text[]) AS k(ord, kind, value)
      JOIN ${leads} USING (ord)
      ORDER BY k.kind, k.value
      ON CONFLICT (workspace_id, kind, value) DO NOTHING`;
}

/** A run's rows as a set statement's parameters; `row` gives a row's JSON (its `ord` is added). */
export function leadRowsInput<Item extends { keys: readonly MatchKey[]; tagIds: readonly number[]; events: readonly NewLeadEvent[] }>(
  workspaceId: number,
  items: readonly Item[],
  row: (item: Item) => object,
): LeadRowsInput {
  const keys = items.flatMap((item, ord) => item.keys.map((key) => ({ ord, ...key })));
  const tags = items.flatMap((item, ord) => [...new Set(item.tagIds)].map((tagId) => ({ ord, tagId })));
  return {
    workspaceId,
    rows: jsonParameter(items.map((item, ord) => ({ ord, ...row(item) }))),
    keyOrds: keys.map((key) => key.ord),
    keyKinds: keys.map((key) => key.kind),
    keyValues: keys.map((key) => key.value),
    tagOrds: tags.map((tag) => tag.ord),
    tagIds: tags.map((tag) => tag.tagId),
    ...newLeadEventInputs(items.flatMap((item, ord) => item.events.map((event) => ({ ord, event })))),
  };
}

export function newLeadsInput(workspaceId: number, leads: readonly NewLeadWrite[]): NewLeadsInput {
  return leadRowsInput(workspaceId, leads, (lead) => ({ key_count: lead.keys.length, ...lead.values }));
}

/** A batch's run of new leads: planned per call, for its number of rows. */
const NEW_LEADS = newLeadsStatement<WrittenLead>({ records: false, named: false });
/** New leads whose callers answer with them (POST /leads): prepared once, returning each lead as stored. */
export const NEW_LEAD_RECORDS = newLeadsStatement<WrittenLead & LeadRecord>({ records: true, named: true });

/**
 * New leads inside a transaction (see newLeadsStatement). With `records`, each written lead
 * comes back as stored too, which saves POST /leads the read-back round trip. Incomplete
 * leads: delete them and match again.
 */
export async function insertNewLeads(
  db: Executor,
  workspaceId: number,
  leads: readonly NewLeadWrite[],
  options: { records: boolean } = { records: false },
): Promise<Array<WrittenLead & { record?: LeadRecord }>> {
  if (!options.records) return NEW_LEADS.execute(db, newLeadsInput(workspaceId, leads));
  const rows = await NEW_LEAD_RECORDS.execute(db, newLeadsInput(workspaceId, leads));
  return rows.map((row) => {
    const { ord, complete, ...record } = row;
    return { ord, id: record.id, complete, record };
  });
}

/** One new lead inside a transaction, returned as stored. Incomplete: delete it and match again. */
export async function insertNewLead(db: Executor, workspaceId: number, lead: NewLeadWrite): Promise<{ complete: boolean; record: LeadRecord }> {
  const [written] = await insertNewLeads(db, workspaceId, [lead], { records: true });
  return { complete: written!.complete, record: written!.record! };
}

type CreatedCompany = Pick<CompanyRow, 'id' | 'status'> & { domain: string };
type CreatedTag = Pick<TagRow, 'id' | 'name'>;

/**
 * The companies (by domain, see companiesOfDomainsInsert) and tags (by name) a batch's new
 * leads need, in one statement, in the order given; those another request created first are
 * left out of the answer.
 */
export async function insertCompaniesAndTags(
  db: Executor,
  workspaceId: number,
  domains: readonly string[],
  tagNames: readonly string[],
  enrich: boolean,
): Promise<{ created: CreatedCompany[]; tags: CreatedTag[] }> {
  // An INSERT is read back only as a WITH query, and a list with nothing to insert has none: it reads as [].
  const created = domains.length > 0 ? companiesOfDomainsInsert(db, workspaceId, domains, enrich) : null;
  const newTags = tagNames.length > 0 ? missingTagsInsert(db, workspaceId, tagNames) : null;
  const none = sql`'[]'::json`;
  const { rows } = await sql<{ created: CreatedCompany[]; tags: CreatedTag[] }>`
    WITH ${sql.join([...(created ? [sql`created AS (${created})`] : []), ...(newTags ? [sql`new_tags AS (${newTags})`] : [])])}
    SELECT
      ${created ? sql`(SELECT coalesce(json_agg(json_build_object('id', id, 'domain', domain, 'status', status)), '[]'::json) FROM created)` : none} AS created,
      ${newTags ? sql`(SELECT coalesce(json_agg(json_build_object('id', id, 'name', name)), '[]'::json) FROM new_tags)` : none} AS tags
  `.execute(db);
  return rows[0]!;
}
