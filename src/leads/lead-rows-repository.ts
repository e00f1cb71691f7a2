import { sql, type RawBuilder } from 'kysely';
import { companyJson } from '../companies/columns.js';
import type { Executor } from '../db/connect.js';
import type { Placeholders } from '../db/prepared.js';
import { jsonParameter, type JsonbParameter } from '../db/sql.js';
import { tagJson, tagOrder } from '../tags/columns.js';
import { newLeadEventInputs, type NewLeadEvent, type NewLeadEventInputs } from '../outbox/repository.js';
import type { MatchKey } from './lookup-repository.js';

// What the set statements over a run's lead rows share (the new-lead statement in
// new-leads-repository.ts, the merge in write-repository.ts): their parameters, where their
// workspace comes from, and the claim of the rows' match keys.

/**
 * Where a set statement's workspace comes from: one parameter for the whole statement (every
 * statement Citus runs: it routes by that value), or each row's own `workspace_id` (one
 * statement for the runs of several workspaces: plain PostgreSQL only, see src/leads/intake/executor.ts).
 */
export interface WorkspaceScope {
  /** The workspace of the row `alias` (a CTE or table of the run's rows that has `workspace_id` when `across`). */
  of(alias: string): RawBuilder<number>;
  across: boolean;
}

export const oneWorkspace = (workspaceId: RawBuilder<number>): WorkspaceScope => ({ of: () => workspaceId, across: false });
export const eachRowsWorkspace: WorkspaceScope = { of: (alias) => sql<number>`${sql.ref(`${alias}.workspace_id`)}`, across: true };

/**
 * The parameters of a set statement over a run's lead rows of one workspace: the rows as JSON text, and each row's match keys, tags and events by its
 * `ord`, the row's place in the run.
 */
export type LeadRowsInput = { workspaceId: number } & LeadRows;

/** LeadRowsInput but the workspace: what leadRowsInput builds. */
export type LeadRows = {
  rows: JsonbParameter;
  keyOrds: number[];
  keyKinds: string[];
  keyValues: string[];
  tagOrds: number[];
  tagIds: number[];
} & NewLeadEventInputs;

/**
 * Claims each row's match keys for its lead (`leads`: a CTE of the run's leads with `ord` and
 * `id`, and `workspace_id` when the scope is `across`), in key order so that concurrent runs
 * take their locks alike. `held`: a key another lead holds stays with it (`stays`), or fails
 * the statement (`fails`, a unique violation: the statement then writes nothing).
 */
export function claimMatchKeys(
  input: Placeholders<Pick<LeadRowsInput, 'keyOrds' | 'keyKinds' | 'keyValues'>>,
  leads: RawBuilder<unknown>,
  scope: WorkspaceScope,
  held: 'stays' | 'fails' = 'stays',
) {
  const alias = 'claiming';
  return sql`INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
      SELECT ${scope.of(alias)}, k.kind, k.value, ${sql.ref(alias)}.id
      FROM unnest(${input.keyOrds}::int[], ${input.keyKinds}::text[], ${input.keyValues}::text[]) AS k(ord, kind, value)
      JOIN ${leads} AS ${sql.ref(alias)} USING (ord)
      ORDER BY ${scope.across ? sql`${scope.of(alias)}, ` : sql``}k.kind, k.value${
        held === 'stays'
          ? sql`
      ON CONFLICT (workspace_id, kind, value) DO NOTHING`
          : sql``
      }`;
}

/**
 * claimMatchKeys for the leads of one workspace as a statement of VALUES naming it (the Citus
 * executor: one task on the workspace's node), in key order. Returns how many keys each lead
 * claimed.
 */
export async function claimMatchKeysOfWorkspace(
  db: Executor,
  workspaceId: number,
  keys: ReadonlyArray<MatchKey & { leadId: number }>,
  held: 'stays' | 'fails',
): Promise<Map<number, number>> {
  const claimed = new Map<number, number>();
  if (keys.length === 0) return claimed;
  const { rows } = await claimKeysOfWorkspace(workspaceId, keys, held).execute(db);
  for (const { lead_id } of rows) claimed.set(lead_id, (claimed.get(lead_id) ?? 0) + 1);
  return claimed;
}

/** claimMatchKeysOfWorkspace's statement (at least one key). */
export function claimKeysOfWorkspace(workspaceId: number, keys: ReadonlyArray<MatchKey & { leadId: number }>, held: 'stays' | 'fails') {
  const ordered = [...keys].sort((a, b) => compareText(a.kind, b.kind) || compareText(a.value, b.value));
  return sql<{ lead_id: number }>`
    INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
    VALUES ${sql.join(ordered.map((key) => sql`(${workspaceId}::bigint, ${key.kind}, ${key.value}, ${key.leadId}::bigint)`))}
    ${held === 'stays' ? sql`ON CONFLICT (workspace_id, kind, value) DO NOTHING` : sql``}
    RETURNING lead_id`;
}

/** Attaches tags to leads of one workspace (VALUES naming it, in lead and tag order); returns the ones each lead did not have. */
export async function attachTagsOfWorkspace(
  db: Executor,
  workspaceId: number,
  tags: ReadonlyArray<{ leadId: number; tagId: number }>,
): Promise<Array<{ lead_id: number; tag_id: number }>> {
  if (tags.length === 0) return [];
  const { rows } = await attachTagsStatement(workspaceId, tags).execute(db);
  return rows;
}

/** attachTagsOfWorkspace's statement (at least one tag). */
export function attachTagsStatement(workspaceId: number, tags: ReadonlyArray<{ leadId: number; tagId: number }>) {
  const ordered = [...tags].sort((a, b) => a.leadId - b.leadId || a.tagId - b.tagId);
  return sql<{ lead_id: number; tag_id: number }>`
    INSERT INTO lead_tags (workspace_id, lead_id, tag_id)
    VALUES ${sql.join(ordered.map((tag) => sql`(${workspaceId}::bigint, ${tag.leadId}::bigint, ${tag.tagId}::bigint)`))}
    ON CONFLICT (lead_id, tag_id, workspace_id) DO NOTHING
    RETURNING lead_id, tag_id`;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A run's rows as a set statement's parameters; `row` gives a row's JSON (its `ord` is added). */
export function leadRowsInput<Item extends { keys: readonly MatchKey[]; tagIds: readonly number[]; events: readonly NewLeadEvent[]; trace?: string | null }>(
  items: readonly Item[],
  row: (item: Item) => object,
): LeadRows {
  const keys = items.flatMap((item, ord) => item.keys.map((key) => ({ ord, ...key })));
  const tags = items.flatMap((item, ord) => [...new Set(item.tagIds)].map((tagId) => ({ ord, tagId })));
  return {
    rows: jsonParameter(items.map((item, ord) => ({ ord, ...row(item) }))),
    keyOrds: keys.map((key) => key.ord),
    keyKinds: keys.map((key) => key.kind),
    keyValues: keys.map((key) => key.value),
    tagOrds: tags.map((tag) => tag.ord),
    tagIds: tags.map((tag) => tag.tagId),
    ...newLeadEventInputs(
      items.flatMap((item, ord) => item.events.map((event) => ({ ord, event }))),
      items.map((item) => item.trace ?? null),
    ),
  };
}

/**
 * The CTEs `company_records` and `tag_records` a set statement's answer reads its leads'
 * companies and tags from (through CTEs of their own, never a subquery correlated with the
 * written rows: Citus runs the final SELECT over the CTEs' results on the coordinator).
 * `companies`: a FROM item with the wanted `company_id`s; `tags`: one with the wanted `tag_id`s;
 * both with `workspace_id` when the scope is `across`, where each is one primary-key probe (the
 * JSON rows' count is unknown to the planner). MATERIALIZED: each is read once per written lead,
 * and PostgreSQL would otherwise inline it there and run its probes once per lead.
 */
export function leadRecordSources(scope: WorkspaceScope, wanted: { companies: string; tags: string }) {
  if (scope.across)
    return sql`company_records AS MATERIALIZED (
      SELECT c.id, ${companyJson('c', scope.of('c'))} AS company
      FROM (SELECT DISTINCT workspace_id, company_id FROM ${sql.raw(wanted.companies)} WHERE company_id IS NOT NULL) AS wanted
      CROSS JOIN LATERAL (SELECT * FROM companies WHERE workspace_id = wanted.workspace_id AND id = wanted.company_id OFFSET 0) AS c
    ), tag_records AS MATERIALIZED (
      SELECT t.id, ${tagJson('t')} AS tag, row_number() OVER (ORDER BY ${tagOrder('t')}) AS position
      FROM (SELECT DISTINCT workspace_id, tag_id FROM ${sql.raw(wanted.tags)}) AS wanted
      CROSS JOIN LATERAL (SELECT * FROM tags WHERE workspace_id = wanted.workspace_id AND id = wanted.tag_id OFFSET 0) AS t
    )`;
  return sql`company_records AS MATERIALIZED (
      SELECT c.id, ${companyJson('c', scope.of('c'))} AS company FROM companies AS c
      WHERE c.workspace_id = ${scope.of('c')} AND c.id IN (SELECT company_id FROM ${sql.raw(wanted.companies)})
    ), tag_records AS MATERIALIZED (
      SELECT t.id, ${tagJson('t')} AS tag, row_number() OVER (ORDER BY ${tagOrder('t')}) AS position FROM tags AS t
      WHERE t.workspace_id = ${scope.of('t')} AND t.id IN (SELECT tag_id FROM ${sql.raw(wanted.tags)})
    )`;
}
