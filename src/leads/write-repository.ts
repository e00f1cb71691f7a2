import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { LeadRow } from '../db/schema.js';
import { PreparedStatement, type Placeholders } from '../db/prepared.js';
import { MAX_EMAILS, MAX_PHONES } from '../limits.js';
import { mergedLeadEvents, type CompanyAnalyzeEvent } from '../outbox/repository.js';
import { LEAD_SCALAR_COLUMNS, leadColumns, type LeadRecord, type LeadValues } from './columns.js';
import type { MatchKey } from './lookup-repository.js';
import { claimMatchKeys, eachRowsWorkspace, leadRecordSources, leadRowsInput, oneWorkspace, type LeadRows, type WorkspaceScope } from './lead-rows-repository.js';

const REPOSITORY = 'leads/write-repository';

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

/** Everything the merge statement writes for one existing lead: its merged values, the keys it claims, its tags and the events of companies its row created. */
export interface LeadMerge {
  leadId: number;
  /** The row's own values; the lists are merged into the lead's, provided scalars overwrite. */
  values: LeadValues;
  /** Sets company_id only when the lead has none (the row's company came from an email, not an explicit company). */
  fillCompanyOnly: boolean;
  keys: readonly MatchKey[];
  tagIds: readonly number[];
  events: readonly CompanyAnalyzeEvent[];
  /** The trace context of the request that writes it, stored with its events. */
  trace?: string | null;
}

/** A lead the merge statement found and changed, as stored right after (findLeadRecords' shape). */
export type MergedLead = LeadRecord & { ord: number };

/**
 * The merge statement's parameters: each row with `ord`, `lead_id`, `fill_company_only` and the
 * values (a location also as a list), and the leads' ids once more as an array, which the
 * planner can read (it takes any JSON recordset for a hundred rows and would scan the whole
 * workspace's leads, or every workspace's lead_tags, to join them).
 */
export type MergeRows = LeadRows & { leadIds: number[] };
type MergeInput = MergeRows & { workspaceId: number };
/** Across workspaces: also every workspace the rows are of, which the planner can read. */
type MergeAcrossInput = MergeRows & { workspaceIds: number[] };

export const MERGE_SOURCE_COLUMNS = sql.raw(
  [
    'ord int',
    'lead_id bigint',
    'name text',
    ...LEAD_SCALAR_COLUMNS.map((column) => `${column} ${column === 'decision_maker' ? 'boolean' : 'text'}`),
    'company_id bigint',
    'fill_company_only boolean',
    'emails jsonb',
    'phones jsonb',
    'links jsonb',
    'location jsonb',
    'locations jsonb',
    'custom_fields jsonb',
  ].join(', '),
);

/** Provided scalars overwrite (a scalar not sent is null in the row source and leaves the lead's). */
const MERGED_SCALARS = sql.raw(LEAD_SCALAR_COLUMNS.map((column) => `${column} = coalesce(m.${column}, l.${column})`).join(', '));

/** The list `column` with the row's values appended, each once, at most `max` (LIMIT, not an array slice: Citus's coordinator crashes deparsing an UPDATE whose SET takes a slice). */
const appendedList = (column: 'emails' | 'phones', max: number) =>
  sql.raw(`ARRAY(SELECT v FROM unnest(l.${column} || ARRAY(SELECT jsonb_array_elements_text(m.${column}))) WITH ORDINALITY AS t(v, n) GROUP BY v ORDER BY min(n) LIMIT ${max})`);

/**
 * The UPDATE of the merge: each lead `l` (of `leadIds`) with its row `m` of `r` (the rows'
 * recordset), locked in id order; returns each row's `ord` with the lead as changed (`returning`,
 * columns of `l`: all of them unless given).
 */
export function mergeUpdate(leadIds: RawBuilder<number[]>, scope: WorkspaceScope, returning: RawBuilder<unknown> = sql`l.*`) {
  return sql`UPDATE leads AS l SET
      name = m.name,
      ${MERGED_SCALARS},
      company_id = CASE WHEN m.fill_company_only THEN coalesce(l.company_id, m.company_id) ELSE coalesce(m.company_id, l.company_id) END,
      emails = ${appendedList('emails', MAX_EMAILS)},
      phones = ${appendedList('phones', MAX_PHONES)},
      links = l.links || coalesce((SELECT jsonb_agg(n) FROM jsonb_array_elements(m.links) AS n
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(l.links) AS o WHERE o->>'url' = n->>'url')), '[]'::jsonb),
      -- The one-element list comes in built (m.locations), not from jsonb_build_array (STABLE): Citus refuses a non-immutable function in a CASE of an UPDATE.
      locations = CASE WHEN m.location IS NULL THEN l.locations WHEN jsonb_array_length(l.locations) = 0 THEN m.locations
        ELSE jsonb_set(l.locations, '{0}', jsonb_strip_nulls(m.location) || jsonb_strip_nulls(l.locations->0)) END,
      custom_fields = l.custom_fields || m.custom_fields,
      updated_at = now()
    FROM (SELECT * FROM r ORDER BY r.lead_id) AS m
    WHERE l.workspace_id = ${scope.of('m')} AND l.id = ANY(${leadIds}::bigint[]) AND l.id = m.lead_id
    RETURNING m.ord, ${returning}`;
}

/**
 * The one statement that merges intake rows into existing leads (one row or a whole run):
 * provided scalars overwrite, lists gain what they lack, the location fills gaps, the company
 * is set (or only filled in); then each lead's match keys are claimed (keys held by another
 * lead are skipped), its tags attached, and its events written: the given ones, then a
 * `lead.tag_added` for each tag it did not have, row by row in the order given. Leads are
 * locked in id order and keys and tags inserted in key order, so two transactions merging
 * the same leads wait for each other instead of deadlocking. A lead that no longer exists
 * is left out of the answer (and nothing of its row is written): the caller matches that row
 * again. Each lead comes back as stored right after, as findLeadRecords reads it.
 */
function mergeStatement<Input extends MergeRows>(name: string, scopeOf: (input: Placeholders<Input>) => { scope: WorkspaceScope; workspaces: RawBuilder<unknown> }) {
  return new PreparedStatement<Input, MergedLead>({ repository: REPOSITORY, name }, (input) => {
    const { scope, workspaces } = scopeOf(input);
    const sourceColumns = scope.across ? sql`workspace_id bigint, ${MERGE_SOURCE_COLUMNS}` : MERGE_SOURCE_COLUMNS;
    // Across workspaces the rows of each part carry their lead's workspace; of one, it is the parameter.
    const workspaceOf = (alias: string) => (scope.across ? sql`${sql.ref(`${alias}.workspace_id`)}, ` : sql``);
    return sql`
  WITH r AS (
    SELECT * FROM jsonb_to_recordset(${input.rows}::jsonb) AS r(${sourceColumns})
  ), merged AS (
    ${mergeUpdate(input.leadIds, scope)}
  ), claimed AS (
    ${claimMatchKeys(input, sql`merged`, scope)}
  ), tag_rows AS (
    SELECT * FROM unnest(${input.tagOrds}::int[], ${input.tagIds}::bigint[]) WITH ORDINALITY AS t(ord, tag_id, n)
  ), tagged AS (
    INSERT INTO lead_tags (workspace_id, lead_id, tag_id)
    SELECT ${scope.of('merged')}, merged.id, tag_rows.tag_id FROM tag_rows JOIN merged USING (ord)
    ORDER BY merged.id, tag_rows.tag_id
    ON CONFLICT (lead_id, tag_id, workspace_id) DO NOTHING
    RETURNING lead_id, tag_id
  ), queued AS (
    ${mergedLeadEvents({ workspaceId: scope.of('e'), carried: workspaceOf('merged') }, input)}
  ), lead_tag_rows AS (
    -- The statement's snapshot does not see its own inserts: the tags it attached are added to those the leads had.
    SELECT ${workspaceOf('lt')}lt.lead_id, lt.tag_id FROM lead_tags AS lt
    WHERE lt.workspace_id ${workspaces} AND lt.lead_id = ANY(${input.leadIds}::bigint[])
    UNION
    SELECT ${workspaceOf('merged')}merged.id, tag_rows.tag_id FROM tag_rows JOIN merged USING (ord)
  ), ${leadRecordSources(scope, { companies: 'merged', tags: 'lead_tag_rows' })}
  -- Companies and tags through CTEs of their own, never a subquery correlated with the written rows: Citus runs this SELECT over the CTEs' results on the coordinator.
  SELECT merged.ord, ${leadColumns('merged')},
    coalesce((SELECT json_agg(tr.tag ORDER BY tr.position) FROM tag_records AS tr
      WHERE tr.id IN (SELECT ltr.tag_id FROM lead_tag_rows AS ltr WHERE ltr.lead_id = merged.id)), '[]'::json) AS tags,
    (SELECT cr.company FROM company_records AS cr WHERE cr.id = merged.company_id) AS company
  FROM merged
  ORDER BY merged.ord`;
  });
}

/** Merges of one workspace's leads: every statement Citus runs names its workspace. */
const MERGE_INTO_LEADS = mergeStatement<MergeInput>('MERGE_INTO_LEADS', (input) => ({ scope: oneWorkspace(input.workspaceId), workspaces: sql`= ${input.workspaceId}` }));
/** MERGE_INTO_LEADS over the leads of several workspaces, each row's workspace its own (plain PostgreSQL only). */
const MERGE_INTO_LEADS_ACROSS = mergeStatement<MergeAcrossInput>('MERGE_INTO_LEADS_ACROSS', (input) => ({
  scope: eachRowsWorkspace,
  workspaces: sql`= ANY(${input.workspaceIds}::bigint[])`,
}));

/** A merge into a lead of one of several workspaces. */
export type LeadMergeOf = LeadMerge & { workspaceId: number };

/**
 * Merges intake rows into existing leads in one statement, the one way a lead is updated by
 * intake; each lead's `ord` is its position in `merges`, a lead deleted since the lookup is
 * missing from the answer. Merges of one workspace go through MERGE_INTO_LEADS, which names
 * it (every statement Citus runs); merges of several through MERGE_INTO_LEADS_ACROSS (plain
 * PostgreSQL only). On a Citus coordinator the executor merges with mergeIntoLeadsOnCitus
 * (src/leads/citus-writes-repository.ts) instead.
 */
export async function mergeIntoLeads(db: Executor, merges: readonly LeadMergeOf[]): Promise<MergedLead[]> {
  if (merges.length === 0) return [];
  const workspaceIds = [...new Set(merges.map((merge) => merge.workspaceId))];
  if (workspaceIds.length === 1) return MERGE_INTO_LEADS.execute(db, { workspaceId: workspaceIds[0]!, ...mergeRows(merges) });
  return MERGE_INTO_LEADS_ACROSS.execute(db, { ...mergeRows(merges, (merge) => ({ workspace_id: merge.workspaceId })), workspaceIds });
}

/** The merge statement's rows (see MergeInput); `extra`: more of a row's columns. */
export function mergeRows<Merge extends LeadMerge>(merges: readonly Merge[], extra: (merge: Merge) => object = () => ({})): MergeRows {
  return {
    ...leadRowsInput(merges, (merge) => {
      const {
        locations: [location],
        ...values
      } = merge.values;
      return { ...extra(merge), lead_id: merge.leadId, fill_company_only: merge.fillCompanyOnly, ...values, ...(location ? { location, locations: [location] } : {}) };
    }),
    leadIds: merges.map((merge) => merge.leadId),
  };
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
