import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { components } from '../../generated/api.js';
import type { Executor } from '../db/connect.js';
import { enqueue, type OutboxEvent } from '../outbox/repository.js';
import { findTagsByNames } from '../tags/repository.js';
import {
  checkReferences, companyHasDetails, DuplicateRejected, intakeLead, leadValues, RowRejected, type IntakeOptions, type References,
} from './intake.js';
import { referencedTags, type IntakeLookup } from './lookup.js';
import type { TagJson } from './read-repository.js';
import type { PreparedLead } from './prepare.js';
import { inSavepoint } from './savepoint.js';
import { identityMatchRows, type IdentityMatch } from './write-repository.js';

type BatchRowResult = components['schemas']['BatchRowResult'];

const UNEXPECTED_ROW_FAILURE = 'This row could not be processed because of an unexpected error. Retry the request; contact support if it keeps failing.';

/**
 * A row that certainly creates a new lead with no interplay with other rows: its references
 * are valid, none of its match keys exists in the workspace or appears in any other row of
 * the batch, and its company (if any) is found or created by its email domain alone.
 */
interface BulkRow {
  index: number;
  lead: PreparedLead;
  references: References;
  /** The business domain of the person's email, which names the company. */
  domain: string | null;
}

/**
 * Runs the rows of a batch in order inside the caller's transaction and reports each one.
 *
 * Rows that need decisions (a match to update or skip, an explicit company, a rejected
 * reference) run one by one in a savepoint each, exactly as POST /leads runs them. Rows that
 * certainly create a new lead (see BulkRow) are written set-based, a run of consecutive such
 * rows in two statements instead of several per row; the outcome is the same as running them
 * one by one. A dry run runs every row alone, undone before the next.
 */
export async function intakeBatch(
  db: Executor, workspaceId: number, leads: PreparedLead[], options: IntakeOptions, dryRun: boolean, log: Logger,
): Promise<BatchRowResult[]> {
  const rows: BatchRowResult[] = [];
  const alone = async (index: number) => {
    rows[index] = await intakeRowAlone(db, workspaceId, leads[index]!, index, options, dryRun, log);
  };
  if (dryRun) {
    for (const index of leads.keys()) await alone(index);
    return rows;
  }

  const { plan, companies } = await planBulkRows(db, workspaceId, leads, options);
  let run: BulkRow[] = [];
  const flush = async () => {
    if (run.length > 0) await writeRun(db, workspaceId, run, companies, options, rows, alone, log);
    run = [];
  };
  for (const index of leads.keys()) {
    const bulk = plan[index];
    if (bulk) {
      run.push(bulk);
    } else {
      await flush();
      await alone(index);
    }
  }
  await flush();
  return rows;
}

/** One row in its own savepoint: a failing row undoes only itself; a dry-run row is always undone. */
async function intakeRowAlone(
  db: Executor, workspaceId: number, lead: PreparedLead, index: number, options: IntakeOptions, dryRun: boolean, log: Logger,
): Promise<BatchRowResult> {
  try {
    const outcome = await inSavepoint(db, 'batch_row', !dryRun, () => intakeLead(db, workspaceId, lead, options));
    return { index, status: outcome.status, lead_id: dryRun ? null : outcome.leadId, warnings: outcome.warnings };
  } catch (error) {
    if (error instanceof RowRejected) {
      return { index, status: 'failed', lead_id: null, error: error.message, field: error.field };
    }
    if (error instanceof DuplicateRejected) {
      // The spec gives a duplicate's row the matched lead's id, except in a dry run where every lead_id is null.
      return { index, status: 'failed', lead_id: dryRun ? null : error.leadId, error: error.message, field: 'email' };
    }
    log.error({ err: error, index }, 'batch row failed unexpectedly');
    return { index, status: 'failed', lead_id: null, error: UNEXPECTED_ROW_FAILURE, field: null };
  }
}

interface BatchLookup {
  tags: TagJson[];
  matches: IdentityMatch[];
  companies: Array<{ id: number; domain: string }>;
}

/**
 * Reads, in one statement, what every row of the batch refers to. Returns the bulk rows by
 * index, and the companies found by the rows' email domains.
 */
async function planBulkRows(
  db: Executor, workspaceId: number, leads: PreparedLead[], options: IntakeOptions,
): Promise<{ plan: Array<BulkRow | null>; companies: Map<string, number> }> {
  const keys = leads.flatMap((lead) => lead.identities);
  const domains = [...new Set(leads.flatMap((lead) => (lead.company?.emailDomain ? [lead.company.emailDomain] : [])))];
  const { rows } = await sql<BatchLookup>`
    SELECT
      ${referencedTags(workspaceId, leads.flatMap((lead) => lead.tagIds), leads.flatMap((lead) => lead.tagNames))} AS tags,
      (SELECT coalesce(json_agg(json_build_object('kind', m.kind, 'value', m.value, 'lead_id', m.lead_id)), '[]'::json)
        FROM ${identityMatchRows(workspaceId, keys)} AS m
      ) AS matches,
      (SELECT coalesce(json_agg(json_build_object('id', id, 'domain', domain)), '[]'::json)
        FROM companies WHERE workspace_id = ${workspaceId} AND domain = ANY(${sql.val(domains)}::text[])
      ) AS companies
  `.execute(db);
  const lookup = rows[0]!;

  const keyOf = (key: { kind: string; value: string }) => `${key.kind}\u0000${key.value}`;
  const matched = new Set(lookup.matches.map(keyOf));
  const sent = new Map<string, number>();
  for (const key of keys) sent.set(keyOf(key), (sent.get(keyOf(key)) ?? 0) + 1);
  const tagsOnly: IntakeLookup = {
    tags: lookup.tags, matches: [], companyById: null, companyByWebsiteDomain: null, companyByEmailDomain: null, companyByName: null,
  };

  const plan = leads.map((lead, index) => {
    const company = lead.company;
    if (company && (company.id !== null || companyHasDetails(company))) return null;
    if (lead.identities.some((key) => matched.has(keyOf(key)) || sent.get(keyOf(key))! > 1)) return null;
    let references: References;
    try {
      references = checkReferences(tagsOnly, lead, options);
    } catch {
      return null; // the row runs alone and reports the rejection
    }
    return { index, lead, references, domain: company?.emailDomain ?? null };
  });
  return { plan, companies: new Map(lookup.companies.map((company) => [company.domain, company.id])) };
}

/**
 * Writes a run of bulk rows: first the companies and tags they need that do not exist yet,
 * then every lead with its match keys, tags and events in one statement. A row that lost one
 * of its keys to a concurrent request meanwhile is undone and runs alone (it then matches);
 * if the run fails as a whole, every row of it runs alone.
 */
async function writeRun(
  db: Executor, workspaceId: number, run: BulkRow[], companies: ReadonlyMap<string, number>, options: IntakeOptions, rows: BatchRowResult[],
  alone: (index: number) => Promise<void>, log: Logger,
): Promise<void> {
  let written: Array<{ ord: number; id: number; complete: boolean }>;
  let analyzeEvents: Map<number, OutboxEvent[]>;
  try {
    ({ written, analyzeEvents } = await inSavepoint(db, 'batch_run', true, () => writeRunStatements(db, workspaceId, run, companies, options)));
  } catch (error) {
    log.warn({ err: error, rows: run.map((row) => row.index) }, 'bulk write of batch rows failed; running them one by one');
    for (const row of run) await alone(row.index);
    return;
  }

  const lost: BulkRow[] = [];
  for (const { ord, id, complete } of written) {
    const row = run[ord]!;
    if (complete) {
      rows[row.index] = { index: row.index, status: 'created', lead_id: id, warnings: row.lead.warnings };
    } else {
      lost.push(row);
    }
  }
  if (lost.length === 0) return;
  // A concurrent request created one of these people after the lookup: undo the new lead
  // (its claimed keys go with it), keep the events of companies this row created, match again.
  await db.deleteFrom('leads').where('id', 'in', written.filter((row) => !row.complete).map((row) => row.id)).execute();
  await enqueue(db, workspaceId, lost.flatMap((row) => analyzeEvents.get(row.index) ?? []));
  for (const row of lost) await alone(row.index);
}

async function writeRunStatements(db: Executor, workspaceId: number, run: BulkRow[], companies: ReadonlyMap<string, number>, options: IntakeOptions) {
  // Companies by domain and tags by name that the rows need: found by the batch's lookup, or
  // created now in the order the rows name them (the first row naming a new company fires its
  // analysis).
  const companyIds = new Map(companies);
  const domains = [...new Set(run.flatMap((row) => (row.domain && !companyIds.has(row.domain) ? [row.domain] : [])))];
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of run) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const tagIds = new Map<string, number>();
  const analyzeEvents = new Map<number, OutboxEvent[]>();

  if (domains.length > 0 || missingTags.size > 0) {
    const status = options.enrich ? 'pending' : 'not_analyzed';
    const { rows } = await sql<{ created: Array<{ id: number; domain: string }>; tags: Array<{ id: number; name: string }> }>`
      WITH created AS (
        INSERT INTO companies (workspace_id, name, domain, status, links, emails, phones, locations)
        SELECT ${workspaceId}, d.domain, d.domain, ${status},
          jsonb_build_array(jsonb_build_object('type', 'website', 'url', 'https://' || d.domain)), '{}', '{}', '[]'::jsonb
        FROM unnest(${sql.val(domains)}::text[]) WITH ORDINALITY AS d(domain, n)
        ORDER BY d.n
        ON CONFLICT (workspace_id, domain) WHERE domain IS NOT NULL DO NOTHING
        RETURNING id, domain
      ), new_tags AS (
        INSERT INTO tags (workspace_id, name, color, active)
        SELECT ${workspaceId}, t.name, NULL, true
        FROM unnest(${sql.val([...missingTags.values()])}::text[]) WITH ORDINALITY AS t(name, n)
        ORDER BY t.n
        ON CONFLICT (workspace_id, lower(name)) DO NOTHING
        RETURNING id, name
      )
      SELECT
        (SELECT coalesce(json_agg(json_build_object('id', id, 'domain', domain)), '[]'::json) FROM created) AS created,
        (SELECT coalesce(json_agg(json_build_object('id', id, 'name', name)), '[]'::json) FROM new_tags) AS tags
    `.execute(db);
    const { created, tags } = rows[0]!;
    for (const company of created) companyIds.set(company.domain, company.id);
    for (const tag of tags) tagIds.set(tag.name.toLowerCase(), tag.id);

    // Created a moment ago by a concurrent request (or an earlier row of this batch): read them.
    const unresolvedDomains = domains.filter((domain) => !companyIds.has(domain));
    if (unresolvedDomains.length > 0) {
      const raced = await db.selectFrom('companies').where('workspace_id', '=', workspaceId).where('domain', 'in', unresolvedDomains)
        .select(['id', 'domain']).execute();
      for (const company of raced) companyIds.set(company.domain!, company.id);
    }
    const unresolvedTags = [...missingTags.keys()].filter((name) => !tagIds.has(name));
    if (unresolvedTags.length > 0) {
      for (const tag of await findTagsByNames(db, workspaceId, unresolvedTags)) tagIds.set(tag.name.toLowerCase(), tag.id);
    }

    if (status === 'pending') {
      const creator = new Map(created.map((company) => [company.domain, company.id]));
      for (const row of run) {
        const id = row.domain ? creator.get(row.domain) : undefined;
        if (id === undefined) continue;
        creator.delete(row.domain!);
        analyzeEvents.set(row.index, [{ topic: 'company.analyze', payload: { company_id: id } }]);
      }
    }
  }

  const values = run.map((row, ord) => {
    const companyId = row.domain ? companyIds.get(row.domain) : undefined;
    if (row.domain && companyId === undefined) throw new Error(`company for ${row.domain} could not be resolved`);
    return { ord, key_count: row.lead.identities.length, ...leadValues(row.lead, companyId ?? null) };
  });
  const keys = run.flatMap((row, ord) => row.lead.identities.map((key) => ({ ord, ...key })));
  const tags = run.flatMap((row, ord) => [
    ...row.references.tagIds,
    ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!),
  ].map((tagId) => ({ ord, tagId })));
  const events = run.flatMap((row, ord) => [...(analyzeEvents.get(row.index) ?? []), { topic: 'lead.created', payload: {} }].map((event) => ({ ord, ...event })));

  const { rows: written } = await sql<{ ord: number; id: number; complete: boolean }>`
    WITH r AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(values)}::jsonb) AS r(
        ord int, key_count int, company_id bigint, name text, job_title text, description text, gender text, language text,
        decision_maker boolean, emails jsonb, phones jsonb, links jsonb, locations jsonb, custom_fields jsonb)
    ), ids AS (
      SELECT r.ord, nextval(pg_get_serial_sequence('leads', 'id')) AS id FROM r ORDER BY r.ord
    ), lead AS (
      INSERT INTO leads (id, workspace_id, company_id, name, job_title, description, gender, language, decision_maker,
        source, stage, chargeable, emails, phones, links, locations, custom_fields)
      OVERRIDING SYSTEM VALUE
      SELECT ids.id, ${workspaceId}, r.company_id, r.name, r.job_title, r.description, r.gender, r.language, coalesce(r.decision_maker, false),
        'api', 'new', false, ARRAY(SELECT jsonb_array_elements_text(r.emails)), ARRAY(SELECT jsonb_array_elements_text(r.phones)),
        r.links, r.locations, r.custom_fields
      FROM r JOIN ids USING (ord)
      ORDER BY r.ord
    ), claimed AS (
      INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
      SELECT ${workspaceId}, k.kind, k.value, ids.id
      FROM unnest(${sql.val(keys.map((key) => key.ord))}::int[], ${sql.val(keys.map((key) => key.kind))}::text[], ${sql.val(keys.map((key) => key.value))}::text[])
        AS k(ord, kind, value)
      JOIN ids USING (ord)
      ORDER BY k.kind, k.value
      ON CONFLICT (workspace_id, kind, value) DO NOTHING
      RETURNING lead_id
    ), claimed_count AS (
      SELECT lead_id, count(*) AS n FROM claimed GROUP BY lead_id
    ), complete AS (
      SELECT ids.ord, ids.id FROM ids JOIN r USING (ord) LEFT JOIN claimed_count AS c ON c.lead_id = ids.id
      WHERE r.key_count = coalesce(c.n, 0)
    ), tagged AS (
      INSERT INTO lead_tags (lead_id, tag_id)
      SELECT complete.id, t.tag_id
      FROM unnest(${sql.val(tags.map((tag) => tag.ord))}::int[], ${sql.val(tags.map((tag) => tag.tagId))}::bigint[]) AS t(ord, tag_id)
      JOIN complete USING (ord)
      ON CONFLICT DO NOTHING
    ), queued AS (
      INSERT INTO outbox (workspace_id, topic, payload)
      SELECT ${workspaceId}, e.topic, CASE WHEN e.topic LIKE 'lead.%' THEN e.payload || jsonb_build_object('lead_id', complete.id) ELSE e.payload END
      FROM unnest(${sql.val(events.map((event) => event.ord))}::int[], ${sql.val(events.map((event) => event.topic))}::text[],
        ${sql.val(events.map((event) => JSON.stringify(event.payload)))}::jsonb[]) WITH ORDINALITY AS e(ord, topic, payload, n)
      JOIN complete USING (ord)
      ORDER BY e.n
    )
    SELECT ids.ord, ids.id, complete.id IS NOT NULL AS complete FROM ids LEFT JOIN complete USING (ord) ORDER BY ids.ord
  `.execute(db);
  return { written, analyzeEvents };
}
