import { sql } from 'kysely';
import { companiesOfDomainsInsert } from '../companies/repository.js';
import type { Executor } from '../db/connect.js';
import { PreparedStatement, type Placeholders } from '../db/prepared.js';
import type { CompanyRow, TagRow } from '../db/schema.js';
import { newLeadEvents, type NewLeadEvent } from '../outbox/repository.js';
import { missingTagsInsert } from '../tags/repository.js';
import { leadColumns, NEW_LEAD_COLUMNS, type LeadRecord, type LeadValues } from './columns.js';
import {
  claimMatchKeys,
  eachRowsWorkspace,
  leadRecordSources,
  leadRowsInput,
  oneWorkspace,
  type LeadRows,
  type LeadRowsInput,
  type WorkspaceScope,
} from './lead-rows-repository.js';
import type { MatchKey } from './lookup-repository.js';
import { addToDailyCounts } from './daily-counts-repository.js';

const REPOSITORY = 'leads/new-leads-repository';

// The statements that create leads: every new lead is written by the one new-lead statement,
// after the companies and tags a batch's new leads need.

/** Everything the new-lead statement writes for one lead: the row, its match keys, its tags and its events. */
export interface NewLeadWrite {
  values: LeadValues;
  keys: readonly MatchKey[];
  tagIds: readonly number[];
  events: readonly NewLeadEvent[];
  /** The trace context of the request that writes it, stored with its events. */
  trace?: string | null;
  /** How the lead came in when not through the API: a CSV import's leads are stored as such. */
  source?: 'import';
}

/** A lead the statement wrote: complete when it claimed every match key it was given. */
export interface WrittenLead {
  ord: number;
  id: number;
  complete: boolean;
}

export const LEAD_SOURCE_COLUMNS = NEW_LEAD_COLUMNS.flatMap(([column, type]) => (type ? [`${column} ${type}`] : []));
export const INSERTED_COLUMNS = sql.raw(NEW_LEAD_COLUMNS.map(([column]) => column).join(', '));
export const INSERTED_VALUES = sql.raw(NEW_LEAD_COLUMNS.map(([, , value]) => value).join(', '));

/**
 * The one statement that writes new leads: each lead's row, its match keys, its tags and its
 * events, ids taken from the sequence in the leads' order. A lead is complete when it claimed
 * every key it was given (a concurrent request may have taken one since the lookup); only
 * complete leads get their tags and events.
 *
 * It runs inside a transaction and inserts every lead row: the caller deletes the
 * incomplete ones and matches them again. With `commitsAlone` it runs with no transaction
 * around it instead: a key another lead holds fails it (it writes nothing, and the caller runs
 * its leads the transactional way), so every lead it writes is complete, and it adds its leads
 * to the day's counts itself (created; the claims are read first, so the counts' row lock is taken last).
 * With `records`, each row of the answer is also the lead as findLeadRecords reads it right
 * after (its tags exactly the ones given, its company as the transaction sees it).
 */
function newLeadsStatement<Input extends LeadRows, Row extends WrittenLead>(
  name: string,
  scopeOf: (input: Placeholders<Input>) => WorkspaceScope,
  options: { records: boolean; named: boolean; commitsAlone?: boolean },
) {
  // The records read companies and tags through CTEs of their own, never a subquery correlated
  // with the written rows: Citus runs the final SELECT over the CTEs' results on the coordinator.
  const answer = options.records
    ? sql`ids.ord, complete.id IS NOT NULL AS complete, ${leadColumns('lead')},
        coalesce((SELECT json_agg(tr.tag ORDER BY tr.position) FROM tag_records AS tr
          WHERE tr.id IN (SELECT tag_id FROM tag_rows WHERE tag_rows.ord = ids.ord)), '[]'::json) AS tags,
        (SELECT cr.company FROM company_records AS cr WHERE cr.id = lead.company_id) AS company
      FROM ids LEFT JOIN complete USING (ord) LEFT JOIN lead ON lead.id = ids.id`
    : sql`ids.ord, ids.id, complete.id IS NOT NULL AS complete FROM ids LEFT JOIN complete USING (ord)`;
  const records = (scope: WorkspaceScope) =>
    options.records ? sql`, ${leadRecordSources(scope, { companies: 'r', tags: scope.across ? 'tag_rows JOIN ids USING (ord)' : 'tag_rows' })}` : sql``;
  const counted = (scope: WorkspaceScope) =>
    options.commitsAlone
      ? sql`, counted AS (
      ${addToDailyCounts(sql`(SELECT ${scope.of('complete')}::bigint AS workspace_id, count(*) AS created, 0 AS updated, 0 AS skipped, 0 AS failed
        FROM complete GROUP BY 1) AS c`)}
    )`
      : sql``;
  return new PreparedStatement<Input, Row>(
    { repository: REPOSITORY, name },
    (input) => {
      const scope = scopeOf(input);
      const sourceColumns = sql.raw(['ord int', 'key_count int', ...(scope.across ? ['workspace_id bigint'] : []), ...LEAD_SOURCE_COLUMNS].join(', '));
      return sql`
    WITH r AS (
      SELECT * FROM jsonb_to_recordset(${input.rows}::jsonb) AS r(${sourceColumns})
    ), ids AS (
      SELECT r.ord, ${scope.across ? sql`r.workspace_id, ` : sql``}nextval(pg_get_serial_sequence('leads', 'id')) AS id FROM r ORDER BY r.ord
    ), lead AS (
      INSERT INTO leads (id, workspace_id, ${INSERTED_COLUMNS})
      OVERRIDING SYSTEM VALUE
      SELECT ids.id, ${scope.of('r')}, ${INSERTED_VALUES}
      FROM r JOIN ids USING (ord)
      ORDER BY r.ord
      RETURNING *
    ), claimed AS (
      ${claimMatchKeys(input, sql`ids`, scope, options.commitsAlone ? 'fails' : 'stays')}
      RETURNING lead_id
    ), claimed_count AS (
      SELECT lead_id, count(*) AS n FROM claimed GROUP BY lead_id
    ), complete AS (
      SELECT ids.* FROM ids JOIN r USING (ord) LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
      WHERE r.key_count = coalesce(c.n, 0)
    ), tag_rows AS (
      SELECT * FROM unnest(${input.tagOrds}::int[], ${input.tagIds}::bigint[]) AS t(ord, tag_id)
    ), tagged AS (
      INSERT INTO lead_tags (workspace_id, lead_id, tag_id)
      SELECT ${scope.of('complete')}, complete.id, tag_rows.tag_id FROM tag_rows JOIN complete USING (ord)
      ON CONFLICT DO NOTHING
    ), queued AS (
      ${newLeadEvents(scope.of('l'), 'complete', input)}
    )${counted(scope)}${records(scope)}
    SELECT ${answer}
    ORDER BY ids.ord`;
    },
    { named: options.named },
  );
}

/** The parameters of the new-lead statements: each row with `ord`, `key_count` and the lead values. */
export type NewLeadsInput = LeadRowsInput;

/** A new lead's JSON row of the new-lead statements. */
const newLeadRow = (lead: NewLeadWrite) => ({ key_count: lead.keys.length, source: lead.source ?? null, ...lead.values });

export function newLeadsInput(workspaceId: number, leads: readonly NewLeadWrite[]): NewLeadsInput {
  return { workspaceId, ...leadRowsInput(leads, newLeadRow) };
}

const oneWorkspaceOf = (input: Placeholders<NewLeadsInput>) => oneWorkspace(input.workspaceId);
/** A batch's run of new leads: planned per call, for its number of rows. */
const NEW_LEADS = newLeadsStatement<NewLeadsInput, WrittenLead>('NEW_LEADS', oneWorkspaceOf, { records: false, named: false });
/** New leads whose callers answer with them (POST /leads): prepared once, returning each lead as stored. */
export const NEW_LEAD_RECORDS = newLeadsStatement<NewLeadsInput, WrittenLead & LeadRecord>('NEW_LEAD_RECORDS', oneWorkspaceOf, { records: true, named: true });
/** NEW_LEAD_RECORDS over the runs of several workspaces, each row's workspace its own (plain PostgreSQL only); prepared once too. */
const NEW_LEAD_RECORDS_ACROSS = newLeadsStatement<LeadRows, WrittenLead & LeadRecord>('NEW_LEAD_RECORDS_ACROSS', () => eachRowsWorkspace, { records: true, named: true });

/** NEW_LEAD_RECORDS and NEW_LEAD_RECORDS_ACROSS committing on their own, the day's counts with them. */
const NEW_LEAD_RECORDS_ALONE = newLeadsStatement<NewLeadsInput, WrittenLead & LeadRecord>('NEW_LEAD_RECORDS_ALONE', oneWorkspaceOf, {
  records: true,
  named: true,
  commitsAlone: true,
});
const NEW_LEAD_RECORDS_ACROSS_ALONE = newLeadsStatement<LeadRows, WrittenLead & LeadRecord>('NEW_LEAD_RECORDS_ACROSS_ALONE', () => eachRowsWorkspace, {
  records: true,
  named: true,
  commitsAlone: true,
});

/** A new lead of one of several workspaces. */
export type NewLeadOf = NewLeadWrite & { workspaceId: number };

/** A lead the statement wrote, as stored when the statement read it back. */
export type WrittenLeadOf = WrittenLead & { record?: LeadRecord };

/**
 * Writes new leads (see newLeadsStatement), the one way every new lead is inserted; `ord`: the
 * lead's position in `leads`. Leads of one workspace go through a statement that names it (every
 * statement Citus runs); leads of several through one whose rows carry their workspace (plain
 * PostgreSQL only). `records`: each written lead comes back as stored too, which saves POST
 * /leads the read-back round trip. `commitsAlone`: no transaction around it, the day's counts
 * added, and a key another lead holds fails it writing nothing. Inside a transaction,
 * incomplete leads are the caller's to delete and match again. On a Citus coordinator the
 * executor writes them with insertNewLeadsOnCitus (src/leads/citus-writes-repository.ts) instead.
 */
export async function insertNewLeads(
  db: Executor,
  leads: readonly NewLeadOf[],
  { records, commitsAlone = false }: { records: boolean; commitsAlone?: boolean },
): Promise<WrittenLeadOf[]> {
  const workspaceId = leads[0]!.workspaceId;
  if (leads.some((lead) => lead.workspaceId !== workspaceId)) {
    return withRecords(await (commitsAlone ? NEW_LEAD_RECORDS_ACROSS_ALONE : NEW_LEAD_RECORDS_ACROSS).execute(db, acrossInput(leads)));
  }
  const input = newLeadsInput(workspaceId, leads);
  if (commitsAlone) return withRecords(await NEW_LEAD_RECORDS_ALONE.execute(db, input));
  return records ? withRecords(await NEW_LEAD_RECORDS.execute(db, input)) : NEW_LEADS.execute(db, input);
}

const acrossInput = (leads: readonly NewLeadOf[]) => leadRowsInput(leads, (lead) => ({ workspace_id: lead.workspaceId, ...newLeadRow(lead) }));

const withRecords = (rows: ReadonlyArray<WrittenLead & LeadRecord>) =>
  rows.map((row) => {
    const { ord, complete, ...record } = row;
    return { ord, id: record.id, complete, record };
  });

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
