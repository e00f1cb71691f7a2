import type { Logger } from 'pino';
import type { BatchRowResult } from '../../generated/api.js';
import { findCompaniesByDomains } from '../companies/repository.js';
import { isUnavailable } from '../db/availability.js';
import type { Executor } from '../db/connect.js';
import { inSavepoint } from '../db/savepoint.js';
import { enqueue, type CompanyAnalyzeEvent } from '../outbox/repository.js';
import { findTagsByNames } from '../tags/repository.js';
import { fastPathCompany, type FastPathCompany } from './fast-path.js';
import { lookupForBatch, rowLookup, type MatchKey } from './lookup.js';
import type { PreparedLead } from './prepare.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { checkReferences, intakeLead, leadValues, type IntakeOptions, type References } from './row-intake.js';
import { deleteLeads, insertCompaniesAndTags, insertNewLeads } from './write-repository.js';

const UNEXPECTED_ROW_FAILURE = 'This row could not be processed because of an unexpected error. Retry the request; contact support if it keeps failing.';

/** A row on the fast path (see fastPathCompany), its references checked. */
interface BulkRow {
  index: number;
  lead: PreparedLead;
  references: References;
  company: FastPathCompany;
}

/**
 * Runs the rows of a batch in order inside the caller's transaction and reports each one.
 *
 * Rows that need decisions (a match to update or skip, a company to fill, a rejected
 * reference) run one by one in a savepoint each, exactly as POST /leads runs them. Rows on the
 * fast path are written set-based, a run of consecutive such rows in two statements instead of
 * several per row; the outcome is the same as running them one by one. A dry run runs every
 * row alone, undone before the next.
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

  const plan = await planBulkRows(db, workspaceId, leads, options);
  let run: BulkRow[] = [];
  const flush = async () => {
    if (run.length > 0) await writeRun(db, workspaceId, run, options, rows, alone, log);
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
    if (isUnavailable(error)) throw error; // the database went away: the call fails (503), not each row
    log.error({ err: error, index }, 'batch row failed unexpectedly');
    return { index, status: 'failed', lead_id: null, error: UNEXPECTED_ROW_FAILURE, field: null };
  }
}

/** Reads, in one statement, what every row of the batch refers to; returns the rows on the fast path by index. */
async function planBulkRows(db: Executor, workspaceId: number, leads: PreparedLead[], options: IntakeOptions): Promise<Array<BulkRow | null>> {
  const lookup = await lookupForBatch(db, workspaceId, leads);
  const keyOf = (key: MatchKey) => `${key.kind}\u0000${key.value}`;
  const sent = new Map<string, number>();
  for (const key of leads.flatMap((lead) => lead.identities)) sent.set(keyOf(key), (sent.get(keyOf(key)) ?? 0) + 1);
  const sharedKey = (key: MatchKey) => sent.get(keyOf(key))! > 1;

  return leads.map((lead, index) => {
    const view = rowLookup(lookup, lead);
    let references: References;
    try {
      references = checkReferences(view, lead, options);
    } catch {
      return null; // the row runs alone and reports the rejection
    }
    const company = fastPathCompany(lead, view, sharedKey);
    return company === undefined ? null : { index, lead, references, company };
  });
}

/**
 * Writes a run of bulk rows: first the companies and tags they need that do not exist yet,
 * then every lead with its match keys, tags and events in one statement. A row that lost one
 * of its keys to a concurrent request meanwhile is undone and runs alone (it then matches);
 * if the run fails as a whole, every row of it runs alone.
 */
async function writeRun(
  db: Executor, workspaceId: number, run: BulkRow[], options: IntakeOptions, rows: BatchRowResult[],
  alone: (index: number) => Promise<void>, log: Logger,
): Promise<void> {
  let written: Array<{ ord: number; id: number; complete: boolean }>;
  let analyzeEvents: Map<number, CompanyAnalyzeEvent[]>;
  try {
    ({ written, analyzeEvents } = await inSavepoint(db, 'batch_run', true, () => writeRunStatements(db, workspaceId, run, options)));
  } catch (error) {
    if (isUnavailable(error)) throw error;
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
  await deleteLeads(db, written.filter((row) => !row.complete).map((row) => row.id));
  await enqueue(db, workspaceId, lost.flatMap((row) => analyzeEvents.get(row.index) ?? []));
  for (const row of lost) await alone(row.index);
}

const newDomainOf = (row: BulkRow) => (row.company && 'newDomain' in row.company ? row.company.newDomain : null);

async function writeRunStatements(db: Executor, workspaceId: number, run: BulkRow[], options: IntakeOptions) {
  // Companies by domain and tags by name that the rows need and the lookup did not find,
  // created now in the order the rows name them (the first row naming a new company fires its
  // analysis).
  const domains = [...new Set(run.flatMap((row) => newDomainOf(row) ?? []))];
  const missingTags = new Map<string, string>(); // lower-cased -> as first sent
  for (const row of run) for (const name of row.references.missingTagNames) if (!missingTags.has(name.toLowerCase())) missingTags.set(name.toLowerCase(), name);
  const companyIds = new Map<string, number>();
  const tagIds = new Map<string, number>();
  const analyzeEvents = new Map<number, CompanyAnalyzeEvent[]>();

  if (domains.length > 0 || missingTags.size > 0) {
    const status = options.enrich ? 'pending' : 'not_analyzed';
    const { created, tags } = await insertCompaniesAndTags(db, workspaceId, domains, [...missingTags.values()], status);
    for (const company of created) companyIds.set(company.domain, company.id);
    for (const tag of tags) tagIds.set(tag.name.toLowerCase(), tag.id);

    // Created a moment ago by a concurrent request (or an earlier row of this batch): read them.
    const unresolvedDomains = domains.filter((domain) => !companyIds.has(domain));
    for (const company of await findCompaniesByDomains(db, workspaceId, unresolvedDomains)) companyIds.set(company.domain!, company.id);
    const unresolvedTags = [...missingTags.keys()].filter((name) => !tagIds.has(name));
    for (const tag of await findTagsByNames(db, workspaceId, unresolvedTags)) tagIds.set(tag.name.toLowerCase(), tag.id);

    if (status === 'pending') {
      const creator = new Map(created.map((company) => [company.domain, company.id]));
      for (const row of run) {
        const domain = newDomainOf(row);
        const id = domain ? creator.get(domain) : undefined;
        if (id === undefined) continue;
        creator.delete(domain!);
        analyzeEvents.set(row.index, [{ topic: 'company.analyze', payload: { company_id: id } }]);
      }
    }
  }

  const written = await insertNewLeads(db, workspaceId, run.map((row) => {
    const domain = newDomainOf(row);
    const companyId = row.company === null ? null : 'id' in row.company ? row.company.id : companyIds.get(row.company.newDomain);
    if (companyId === undefined) throw new Error(`company for ${domain} could not be resolved`);
    return {
      values: leadValues(row.lead, companyId),
      keys: row.lead.identities,
      tagIds: [...row.references.tagIds, ...row.references.missingTagNames.map((name) => tagIds.get(name.toLowerCase())!)],
      events: [...(analyzeEvents.get(row.index) ?? []), { topic: 'lead.created' as const }],
    };
  }));
  return { written, analyzeEvents };
}
