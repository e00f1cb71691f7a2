import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../db/connect.js';
import { PreparedStatement } from '../db/prepared.js';
import type { CompanyRow, IdentityKind } from '../db/schema.js';
import { tagJson, type StoredTag } from '../tags/columns.js';

const REPOSITORY = 'leads/lookup-repository';

// What lead intake reads before it writes, as statements: the tags a payload names, the
// existing leads holding its match keys and its company candidates, one statement per request
// or per batch. What to look for: src/leads/intake/executor.ts (a group's runs) and
// row-intake.ts (a row alone); what the answer means: src/leads/intake/plan.ts.

export interface MatchKey {
  kind: IdentityKind;
  value: string;
}
export interface IdentityMatch extends MatchKey {
  lead_id: number;
}

/** Everything an intake row reads before it writes, fetched in one round trip. */
export interface IntakeLookup {
  /** Tags of the workspace with any of the payload's tag ids or (case-insensitive) names. */
  tags: StoredTag[];
  /** Existing leads of the workspace holding any of the payload's match keys. */
  matches: IdentityMatch[];
  /** The payload's company.id when it belongs to the workspace. */
  companyById: number | null;
  /** The company holding the payload's domain (website, else business email). */
  companyByDomain: number | null;
  /** When the payload gives no domain: the oldest company named company.name (case-insensitive, exact). */
  companyByName: number | null;
}

/** What a whole batch refers to: the parts of an IntakeLookup for every row at once. */
export interface BatchLookup {
  tags: StoredTag[];
  matches: IdentityMatch[];
  /** The companies of the workspace with any row's company.id or domain. */
  companies: Array<Pick<CompanyRow, 'id' | 'domain'>>;
}

/** Placeholders of a prepared statement (see db/prepared.ts). */
type Input<T> = RawBuilder<T>;

/**
 * The existing leads holding any of these keys (`keys`: a FROM item `k` of `kind`, `value` and
 * `n`, the key's position from 1; `workspace`: the workspace each key is looked for in), as a
 * FROM item. One primary-key probe per key, whatever the planner believes about the table: a
 * plain join against the keys lets it hash the whole workspace's keys instead when its
 * statistics are stale, as they are right after a bulk import.
 */
function identityMatchRows(keys: RawBuilder<unknown>, workspace: RawBuilder<unknown>) {
  return sql`(
    SELECT k.n, i.workspace_id, i.kind, i.value, i.lead_id
    FROM ${keys}
    CROSS JOIN LATERAL (
      SELECT i.workspace_id, i.kind, i.value, i.lead_id FROM lead_identities AS i
      WHERE i.workspace_id = ${workspace} AND i.kind = k.kind AND i.value = k.value
      OFFSET 0
    ) AS i
  )`;
}

/** These keys, all of one workspace, as identityMatchRows takes them. */
const keysOfOneWorkspace = (kinds: Input<string[]>, values: Input<string[]>) => sql`unnest(${kinds}::text[], ${values}::text[]) WITH ORDINALITY AS k(kind, value, n)`;

/** The matches of these keys as a JSON array, in the keys' order. */
const matchesJson = (workspaceId: Input<number>, kinds: Input<string[]>, values: Input<string[]>) => sql`
  (SELECT coalesce(json_agg(json_build_object('kind', m.kind, 'value', m.value, 'lead_id', m.lead_id) ORDER BY m.n), '[]'::json)
    FROM ${identityMatchRows(keysOfOneWorkspace(kinds, values), workspaceId)} AS m)`;

/** The workspace's tags with any of these ids or lower-case names, as a JSON array. */
const referencedTags = (workspaceId: Input<number>, ids: Input<number[]>, lowerNames: Input<string[]>) => sql`
  (SELECT coalesce(json_agg(${tagJson('tags')}), '[]'::json)
    FROM tags
    WHERE workspace_id = ${workspaceId} AND (id = ANY(${ids}::bigint[]) OR lower(name) = ANY(${lowerNames}::text[])))`;

const IDENTITY_MATCHES = new PreparedStatement<{ workspaceId: number; kinds: string[]; values: string[] }, IdentityMatch>(
  { repository: REPOSITORY, name: 'IDENTITY_MATCHES' },
  (input) => sql`
  SELECT m.kind, m.value, m.lead_id FROM ${identityMatchRows(keysOfOneWorkspace(input.kinds, input.values), input.workspaceId)} AS m ORDER BY m.n
`,
);

/** Every existing lead of the workspace holding any of these keys: one index-bound query. */
export async function findIdentityMatches(db: Executor, workspaceId: number, keys: readonly MatchKey[]): Promise<IdentityMatch[]> {
  if (keys.length === 0) return [];
  return IDENTITY_MATCHES.execute(db, { workspaceId, kinds: keys.map((key) => key.kind), values: keys.map((key) => key.value) });
}

/** The inputs of an intake row's lookup (see INTAKE_LOOKUP). */
export interface IntakeLookupInput {
  workspaceId: number;
  tagIds: number[];
  tagNames: string[];
  kinds: string[];
  values: string[];
  companyId: number | null;
  domain: string | null;
  companyName: string | null;
}

/**
 * The reads of one intake row as one statement: tag references, identity matches and the
 * company candidates. Each part is the query the row would otherwise send on its own (same
 * predicates, same indexes); a part with nothing to look for finds nothing.
 */
export const INTAKE_LOOKUP = new PreparedStatement<IntakeLookupInput, IntakeLookup>(
  { repository: REPOSITORY, name: 'INTAKE_LOOKUP' },
  (input) => sql`
  SELECT
    ${referencedTags(input.workspaceId, input.tagIds, input.tagNames)} AS tags,
    ${matchesJson(input.workspaceId, input.kinds, input.values)} AS matches,
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND id = ${input.companyId}::bigint) AS "companyById",
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND domain = ${input.domain}::text) AS "companyByDomain",
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND lower(name) = ${input.companyName}::text
      ORDER BY id LIMIT 1) AS "companyByName"
`,
);

export async function readIntakeLookup(db: Executor, input: IntakeLookupInput): Promise<IntakeLookup> {
  const [row] = await INTAKE_LOOKUP.execute(db, input);
  return row!;
}

/** The inputs of a batch's lookup (see BATCH_LOOKUP). */
export interface BatchLookupInput {
  workspaceId: number;
  tagIds: number[];
  tagNames: string[];
  kinds: string[];
  values: string[];
  domains: string[];
  companyIds: number[];
}

/** The reads of a whole batch as one statement: what INTAKE_LOOKUP reads, for every row at once. */
export const BATCH_LOOKUP = new PreparedStatement<BatchLookupInput, BatchLookup>(
  { repository: REPOSITORY, name: 'BATCH_LOOKUP' },
  (input) => sql`
  SELECT
    ${referencedTags(input.workspaceId, input.tagIds, input.tagNames)} AS tags,
    ${matchesJson(input.workspaceId, input.kinds, input.values)} AS matches,
    (SELECT coalesce(json_agg(json_build_object('id', id, 'domain', domain)), '[]'::json)
      FROM companies
      WHERE workspace_id = ${input.workspaceId} AND (domain = ANY(${input.domains}::text[]) OR id = ANY(${input.companyIds}::bigint[]))
    ) AS companies
`,
);

export async function readBatchLookup(db: Executor, input: BatchLookupInput): Promise<BatchLookup> {
  const [row] = await BATCH_LOOKUP.execute(db, input);
  return row!;
}

/**
 * The inputs of the lookups of several workspaces' runs at once (see LOOKUPS_ACROSS_WORKSPACES):
 * every key, tag reference and company reference with the workspace it is looked for in.
 */
export interface LookupsAcrossInput {
  keyWorkspaces: number[];
  kinds: string[];
  values: string[];
  tagIdWorkspaces: number[];
  tagIds: number[];
  tagNameWorkspaces: number[];
  tagNames: string[];
  domainWorkspaces: number[];
  domains: string[];
  companyIdWorkspaces: number[];
  companyIds: number[];
}

/** What LOOKUPS_ACROSS_WORKSPACES finds: BATCH_LOOKUP's parts, each found row with its workspace. */
export interface LookupsAcross {
  tags: Array<{ workspace_id: number; tag: StoredTag }>;
  matches: Array<IdentityMatch & { workspace_id: number }>;
  companies: Array<Pick<CompanyRow, 'id' | 'domain' | 'workspace_id'>>;
}

/**
 * BATCH_LOOKUP for the runs of several workspaces in one statement: each reference is looked
 * for in its own workspace, by the same indexes, one probe each (LATERAL: joined by hash, the
 * planner would read every workspace's tags and lower-case each name, on every call). It names
 * no single workspace, so on Citus it would ask every shard: it runs on plain PostgreSQL only
 * (src/leads/intake/executor.ts).
 */
export const LOOKUPS_ACROSS_WORKSPACES = new PreparedStatement<LookupsAcrossInput, LookupsAcross>(
  { repository: REPOSITORY, name: 'LOOKUPS_ACROSS_WORKSPACES' },
  (input) => sql`
  SELECT
    (SELECT coalesce(json_agg(json_build_object('workspace_id', t.workspace_id, 'tag', ${tagJson('t')})), '[]'::json)
      FROM (
        SELECT r.workspace_id, r.id FROM unnest(${input.tagIdWorkspaces}::bigint[], ${input.tagIds}::bigint[]) AS r(workspace_id, id)
        UNION
        SELECT named.workspace_id, named.id FROM unnest(${input.tagNameWorkspaces}::bigint[], ${input.tagNames}::text[]) AS r(workspace_id, name)
          CROSS JOIN LATERAL (SELECT workspace_id, id FROM tags WHERE workspace_id = r.workspace_id AND lower(name) = r.name OFFSET 0) AS named
      ) AS wanted
      CROSS JOIN LATERAL (SELECT * FROM tags WHERE workspace_id = wanted.workspace_id AND id = wanted.id OFFSET 0) AS t
    ) AS tags,
    (SELECT coalesce(json_agg(json_build_object('workspace_id', m.workspace_id, 'kind', m.kind, 'value', m.value, 'lead_id', m.lead_id) ORDER BY m.n), '[]'::json)
      FROM ${identityMatchRows(sql`unnest(${input.keyWorkspaces}::bigint[], ${input.kinds}::text[], ${input.values}::text[]) WITH ORDINALITY AS k(workspace_id, kind, value, n)`, sql`k.workspace_id`)} AS m
    ) AS matches,
    (SELECT coalesce(json_agg(json_build_object('id', c.id, 'domain', c.domain, 'workspace_id', c.workspace_id)), '[]'::json)
      FROM (
        SELECT r.workspace_id, r.id FROM unnest(${input.companyIdWorkspaces}::bigint[], ${input.companyIds}::bigint[]) AS r(workspace_id, id)
        UNION
        SELECT by_domain.workspace_id, by_domain.id FROM unnest(${input.domainWorkspaces}::bigint[], ${input.domains}::text[]) AS r(workspace_id, domain)
          CROSS JOIN LATERAL (SELECT workspace_id, id FROM companies WHERE workspace_id = r.workspace_id AND domain = r.domain OFFSET 0) AS by_domain
      ) AS wanted
      CROSS JOIN LATERAL (SELECT * FROM companies WHERE workspace_id = wanted.workspace_id AND id = wanted.id OFFSET 0) AS c
    ) AS companies
`,
);

export async function readLookupsAcross(db: Executor, input: LookupsAcrossInput): Promise<LookupsAcross> {
  const [row] = await LOOKUPS_ACROSS_WORKSPACES.execute(db, input);
  return row!;
}
