import { sql, type RawBuilder } from 'kysely';
import type { LeadWriteMeta, MatchConflict } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { PreparedStatement } from '../db/prepared.js';
import type { CompanyRow, IdentityKind } from '../db/schema.js';
import { tagJson, type StoredTag } from '../tags/columns.js';
import type { IdentityKey, PreparedCompany, PreparedLead } from './prepare.js';

// What lead intake reads before it writes: the tags a payload names, the existing leads
// holding its match keys and its company candidates, in one statement per request; and the
// match rule that picks the lead those keys decide on, and names the others they point at.

export interface MatchKey { kind: IdentityKind; value: string }
export interface IdentityMatch extends MatchKey { lead_id: number }

/** The lead a payload matches, by the key that decided it, and the other leads its keys point at. */
export interface StrongestMatch {
  leadId: number;
  identity: IdentityKey;
  conflicts: MatchConflict[];
}

/**
 * The match rule: the lead of the strongest key held (emails in the order sent, then the
 * LinkedIn handle, then phones); every other lead some key is held by is a conflict, named
 * once, by its strongest key. Null when no key is held.
 */
export function strongestMatch(identities: readonly IdentityKey[], matches: readonly IdentityMatch[]): StrongestMatch | null {
  const leads: Array<{ leadId: number; identity: IdentityKey }> = [];
  for (const identity of identities) {
    const match = matches.find((candidate) => candidate.kind === identity.kind && candidate.value === identity.value);
    if (match && !leads.some((lead) => lead.leadId === match.lead_id)) leads.push({ leadId: match.lead_id, identity });
  }
  const [matched, ...others] = leads;
  if (!matched) return null;
  const conflicts = others.map(({ leadId, identity }) => ({ lead_id: leadId, matched_on: identity.label, kind: identity.kind }));
  return { ...matched, conflicts };
}

/** What matched, as every lead write answer reports it (meta, a batch row, the 409 body). */
export type MatchReport = Pick<LeadWriteMeta, 'matched_on' | 'match_kind' | 'conflicts'>;

export const nothingMatched = (): MatchReport => ({ matched_on: null, match_kind: null, conflicts: [] });

export const reportMatch = (match: StrongestMatch) =>
  ({ matched_on: match.identity.label, match_kind: match.identity.kind, conflicts: match.conflicts }) satisfies MatchReport;

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
 * The existing leads of the workspace holding any of these keys (`n`: the key's position,
 * from 1), as a FROM item. One primary-key probe per key, whatever the planner believes about
 * the table: a plain join against the keys lets it hash the whole workspace's keys instead
 * when its statistics are stale, as they are right after a bulk import.
 */
function identityMatchRows(workspaceId: Input<number>, kinds: Input<string[]>, values: Input<string[]>) {
  return sql`(
    SELECT k.n, i.kind, i.value, i.lead_id
    FROM unnest(${kinds}::text[], ${values}::text[]) WITH ORDINALITY AS k(kind, value, n)
    CROSS JOIN LATERAL (
      SELECT i.kind, i.value, i.lead_id FROM lead_identities AS i
      WHERE i.workspace_id = ${workspaceId} AND i.kind = k.kind AND i.value = k.value
      OFFSET 0
    ) AS i
  )`;
}

/** The matches of these keys as a JSON array, in the keys' order. */
const matchesJson = (workspaceId: Input<number>, kinds: Input<string[]>, values: Input<string[]>) => sql`
  (SELECT coalesce(json_agg(json_build_object('kind', m.kind, 'value', m.value, 'lead_id', m.lead_id) ORDER BY m.n), '[]'::json)
    FROM ${identityMatchRows(workspaceId, kinds, values)} AS m)`;

/** The workspace's tags with any of these ids or lower-case names, as a JSON array. */
const referencedTags = (workspaceId: Input<number>, ids: Input<number[]>, lowerNames: Input<string[]>) => sql`
  (SELECT coalesce(json_agg(${tagJson('tags')}), '[]'::json)
    FROM tags
    WHERE workspace_id = ${workspaceId} AND (id = ANY(${ids}::bigint[]) OR lower(name) = ANY(${lowerNames}::text[])))`;

/** The inputs of the key and tag parts of a lookup. */
const keyInputs = (keys: readonly MatchKey[]) => ({ kinds: keys.map((key) => key.kind), values: keys.map((key) => key.value) });
const tagInputs = (ids: readonly number[], names: readonly string[]) => ({
  tagIds: [...new Set(ids)], tagNames: [...new Set(names.map((name) => name.toLowerCase()))],
});

const IDENTITY_MATCHES = new PreparedStatement<{ workspaceId: number; kinds: string[]; values: string[] }, IdentityMatch>((input) => sql`
  SELECT m.kind, m.value, m.lead_id FROM ${identityMatchRows(input.workspaceId, input.kinds, input.values)} AS m ORDER BY m.n
`);

/** Every existing lead of the workspace holding any of these keys: one index-bound query. */
export async function findIdentityMatches(db: Executor, workspaceId: number, keys: readonly MatchKey[]): Promise<IdentityMatch[]> {
  if (keys.length === 0) return [];
  return IDENTITY_MATCHES.execute(db, { workspaceId, ...keyInputs(keys) });
}

/**
 * The company an intake row joins as it is: company.id; else the one holding the payload's
 * domain; else, when the payload gives no domain at all, the one named company.name. Null when
 * a company has to be created, or a domainless named company has to take the domain.
 */
export const existingCompanyId = (company: PreparedCompany, lookup: IntakeLookup): number | null =>
  company.id ?? (company.domain !== null ? lookup.companyByDomain : lookup.companyByName);

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
export const INTAKE_LOOKUP = new PreparedStatement<IntakeLookupInput, IntakeLookup>((input) => sql`
  SELECT
    ${referencedTags(input.workspaceId, input.tagIds, input.tagNames)} AS tags,
    ${matchesJson(input.workspaceId, input.kinds, input.values)} AS matches,
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND id = ${input.companyId}::bigint) AS "companyById",
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND domain = ${input.domain}::text) AS "companyByDomain",
    (SELECT id FROM companies WHERE workspace_id = ${input.workspaceId} AND lower(name) = ${input.companyName}::text
      ORDER BY id LIMIT 1) AS "companyByName"
`);

/** What INTAKE_LOOKUP reads for a prepared lead: by-name candidates only when the payload gives no domain. */
export function intakeLookupInput(workspaceId: number, lead: PreparedLead): IntakeLookupInput {
  const company = lead.company;
  const domain = company?.domain ?? null;
  return {
    workspaceId,
    ...tagInputs(lead.tagIds, lead.tagNames),
    ...keyInputs(lead.identities),
    companyId: company?.id ?? null,
    domain,
    companyName: domain === null ? company?.name?.toLowerCase() ?? null : null,
  };
}

export async function lookupForIntake(db: Executor, workspaceId: number, lead: PreparedLead): Promise<IntakeLookup> {
  const [row] = await INTAKE_LOOKUP.execute(db, intakeLookupInput(workspaceId, lead));
  return row!;
}

const BATCH_LOOKUP = new PreparedStatement<
  { workspaceId: number; tagIds: number[]; tagNames: string[]; kinds: string[]; values: string[]; domains: string[]; companyIds: number[] }, BatchLookup
>((input) => sql`
  SELECT
    ${referencedTags(input.workspaceId, input.tagIds, input.tagNames)} AS tags,
    ${matchesJson(input.workspaceId, input.kinds, input.values)} AS matches,
    (SELECT coalesce(json_agg(json_build_object('id', id, 'domain', domain)), '[]'::json)
      FROM companies
      WHERE workspace_id = ${input.workspaceId} AND (domain = ANY(${input.domains}::text[]) OR id = ANY(${input.companyIds}::bigint[]))
    ) AS companies
`);

/** The reads of a whole batch as one statement: what lookupForIntake reads, for every row at once. */
export async function lookupForBatch(db: Executor, workspaceId: number, leads: readonly PreparedLead[]): Promise<BatchLookup> {
  const companies = leads.flatMap((lead) => (lead.company ? [lead.company] : []));
  const [row] = await BATCH_LOOKUP.execute(db, {
    workspaceId,
    ...tagInputs(leads.flatMap((lead) => lead.tagIds), leads.flatMap((lead) => lead.tagNames)),
    ...keyInputs(leads.flatMap((lead) => lead.identities)),
    domains: [...new Set(companies.flatMap((company) => (company.domain !== null ? [company.domain] : [])))],
    companyIds: [...new Set(companies.flatMap((company) => (company.id !== null ? [company.id] : [])))],
  });
  return row!;
}

/** One row's view of its batch's lookup, as lookupForIntake would have read it (by-name candidates aside). */
export function rowLookup(batch: BatchLookup, lead: PreparedLead): IntakeLookup {
  const company = lead.company;
  const found = (match: (candidate: BatchLookup['companies'][number]) => boolean) => batch.companies.find(match)?.id ?? null;
  return {
    tags: batch.tags,
    matches: batch.matches.filter((match) => lead.identities.some((key) => key.kind === match.kind && key.value === match.value)),
    companyById: company?.id != null ? found((candidate) => candidate.id === company.id) : null,
    companyByDomain: company?.domain != null ? found((candidate) => candidate.domain === company.domain) : null,
    companyByName: null,
  };
}
