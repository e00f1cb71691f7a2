import type { Logger } from 'pino';
import { findCompaniesByDomains } from '../companies/repository.js';
import { isUnavailable } from '../db/availability.js';
import { isRetryableConflict } from '../db/conflicts.js';
import type { Executor } from '../db/connect.js';
import { inSavepoint } from '../db/savepoint.js';
import { enqueue, type CompanyAnalyzeEvent } from '../outbox/repository.js';
import { findTagsByNames } from '../tags/repository.js';
import { companyHasDetails } from './company-resolution.js';
import { lookupForBatch, nothingMatched, rowLookup, type IntakeLookup, type MatchKey } from './lookup.js';
import type { PreparedLead } from './prepare.js';
import { findLeadRecords, type LeadRecord } from './read-repository.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { checkReferences, intakeLead, leadValues, type IntakeOptions, type References, type RowOutcome } from './row-intake.js';
import { deleteLeads, insertCompaniesAndTags, insertNewLeads, type WrittenLead } from './write-repository.js';

// The one intake engine. A batch, a group of concurrent POST /leads calls and a lone call are
// all a list of rows run here in order, inside the caller's transaction; they differ only in
// how the caller shapes each row's result into an answer.

/** A row to take in: the prepared lead, and whether its caller answers with the lead as stored. */
export interface IntakeRow {
  lead: PreparedLead;
  /** POST /leads answers with the lead: the row's result then carries its record. */
  wantsRecord: boolean;
}

/** What became of one row: an outcome, a refusal of the row alone, or an unexpected failure of the row alone. */
export type RowResult =
  | { outcome: RowOutcome }
  | { rejected: RowRejected | DuplicateRejected }
  | { unexpected: unknown };

/** How a row on the bulk path gets its company: an existing one, one to create by domain, or none. */
type BulkCompany = { id: number } | { newDomain: string } | null;

/** A row on the bulk path (see bulkCompany), its references checked. */
interface BulkRow extends IntakeRow {
  index: number;
  references: References;
  company: BulkCompany;
}

/**
 * A set-based write failed as a whole. It is not in a savepoint of its own (that would cost
 * every request two round trips): the caller reruns the whole transaction one row at a time.
 */
export class SetBasedWriteFailed extends Error {
  constructor(cause: unknown) {
    super('the set-based write of new leads failed', { cause });
  }
}

/**
 * Runs the rows in order inside the caller's transaction, an earlier row visible to later
 * ones, and reports each. Rows that need decisions (a match to update or skip, a company to
 * fill, a rejected reference) run one by one in a savepoint each. Consecutive rows that
 * certainly create a new person are written set-based, a run of them in two statements; the
 * outcome is the same as running them one by one. A dry run, or a run with `setBased` off,
 * runs every row alone (a dry run's undone before the next). Throws when the database is
 * unreachable (the whole call fails) and SetBasedWriteFailed.
 */
export async function runIntake(
  db: Executor, workspaceId: number, rows: readonly IntakeRow[], options: IntakeOptions, dryRun: boolean, log: Logger, setBased = true,
): Promise<RowResult[]> {
  const results: RowResult[] = [];
  let views: Array<IntakeLookup | undefined> = [];
  const alone = async (index: number) => {
    results[index] = await intakeRowAlone(db, workspaceId, rows[index]!, options, dryRun, log, views[index]);
  };
  if (dryRun || !setBased) {
    for (const index of rows.keys()) await alone(index);
    return results;
  }

  const { plan, lookups } = await planBulkRows(db, workspaceId, rows, options);
  views = lookups;
  let run: BulkRow[] = [];
  const flush = async () => {
    if (run.length > 0) await writeRun(db, workspaceId, run, options, results, alone);
    run = [];
  };
  for (const index of rows.keys()) {
    const bulk = plan[index];
    if (bulk) {
      run.push(bulk);
    } else {
      await flush();
      await alone(index);
    }
  }
  await flush();
  return results;
}

/**
 * The database went away (the call fails, 503), or chose this transaction as a deadlock
 * victim (the whole transaction runs again, its locks released meanwhile): no single row or
 * run is at fault.
 */
const failsTheTransaction = (error: unknown) => isUnavailable(error) || isRetryableConflict(error);

/**
 * One row in its own savepoint: a failing row undoes only itself; a dry-run row is always
 * undone (its record is read before that). `prefetched`: the row's part of the run's lookup,
 * when it is all the row needs.
 */
async function intakeRowAlone(
  db: Executor, workspaceId: number, row: IntakeRow, options: IntakeOptions, dryRun: boolean, log: Logger, prefetched?: IntakeLookup,
): Promise<RowResult> {
  try {
    const outcome = await inSavepoint(db, 'intake_row', !dryRun, async () => {
      const outcome = await intakeLead(db, workspaceId, row.lead, options, prefetched);
      // Read inside the savepoint: what this row left, before a later row changes the lead.
      if (row.wantsRecord && !outcome.record) [outcome.record] = await findLeadRecords(db, workspaceId, [outcome.leadId]);
      return outcome;
    });
    return { outcome };
  } catch (error) {
    if (error instanceof RowRejected || error instanceof DuplicateRejected) return { rejected: error };
    if (failsTheTransaction(error)) throw error;
    log.error({ err: error }, 'lead row failed unexpectedly');
    return { unexpected: error };
  }
}

/**
 * The rule for the bulk path: the row certainly creates a new person (none of its match keys
 * is held in the workspace, nor shared with another row of the same run), and its company is
 * none, or is named by company.id alone, or by the business domain of the person's email alone
 * (found, or created with that domain exactly as intakeLead would). Any company detail to fill
 * in, a website or a name sends the row the general way. Returns the row's company, or
 * undefined when the row does not qualify. The references are checked by the caller first.
 */
function bulkCompany(lead: PreparedLead, lookup: IntakeLookup, sharedKey: (key: MatchKey) => boolean): BulkCompany | undefined {
  const matched = (key: MatchKey) => lookup.matches.some((match) => match.kind === key.kind && match.value === key.value);
  if (lead.identities.some((key) => matched(key) || sharedKey(key))) return undefined;
  const company = lead.company;
  if (!company) return null;
  if (companyHasDetails(company)) return undefined;
  if (company.id !== null) return { id: company.id };
  if (!company.domainFromEmail || company.domain === null) return undefined;
  return lookup.companyByDomain !== null ? { id: lookup.companyByDomain } : { newDomain: company.domain };
}

/**
 * Reads, in one statement, what every row refers to. Returns the rows on the bulk path by
 * index, and each row's view of the lookup where it is all the row needs to run alone: no
 * other row of the run shares a key with it or may create a tag or company it names (the
 * view of a lookup read a moment ago is as good as one read now: concurrent writers are
 * settled by the match keys' claims either way).
 */
async function planBulkRows(
  db: Executor, workspaceId: number, rows: readonly IntakeRow[], options: IntakeOptions,
): Promise<{ plan: Array<BulkRow | null>; lookups: Array<IntakeLookup | undefined> }> {
  const leads = rows.map((row) => row.lead);
  const lookup = await lookupForBatch(db, workspaceId, leads);
  const keyOf = (key: MatchKey) => `${key.kind}\u0000${key.value}`;
  const sent = new Map<string, number>();
  for (const key of leads.flatMap((lead) => lead.identities)) sent.set(keyOf(key), (sent.get(keyOf(key)) ?? 0) + 1);
  const sharedKey = (key: MatchKey) => sent.get(keyOf(key))! > 1;

  const lookups: Array<IntakeLookup | undefined> = [];
  const plan = leads.map((lead, index) => {
    const view = rowLookup(lookup, lead);
    let references: References;
    try {
      references = checkReferences(view, lead, options);
    } catch {
      lookups[index] = view;
      return null; // the row runs alone and reports the rejection
    }
    const company = lead.company;
    const companySettled = company === null || company.id !== null || (company.domain !== null && view.companyByDomain !== null);
    if (companySettled && references.missingTagNames.length === 0 && !lead.identities.some(sharedKey)) lookups[index] = view;
    const bulk = bulkCompany(lead, view, sharedKey);
    return bulk === undefined ? null : { ...rows[index]!, index, references, company: bulk };
  });
  return { plan, lookups };
}

/**
 * Writes a run of bulk rows: first the companies and tags they need that do not exist yet,
 * then every lead with its match keys, tags and events in one statement. A row that lost one
 * of its keys to a concurrent request meanwhile is undone and runs alone (it then matches).
 */
async function writeRun(
  db: Executor, workspaceId: number, run: BulkRow[], options: IntakeOptions, results: RowResult[],
  alone: (index: number) => Promise<void>,
): Promise<void> {
  let written: Array<WrittenLead & { record?: LeadRecord }>;
  let analyzeEvents: Map<number, CompanyAnalyzeEvent[]>;
  try {
    ({ written, analyzeEvents } = await writeRunStatements(db, workspaceId, run, options));
  } catch (error) {
    if (failsTheTransaction(error)) throw error;
    throw new SetBasedWriteFailed(error);
  }

  const lost: BulkRow[] = [];
  for (const { ord, id, complete, record } of written) {
    const row = run[ord]!;
    if (complete) {
      results[row.index] = { outcome: { status: 'created', leadId: id, match: nothingMatched(), warnings: row.lead.warnings, createdCompanyId: null, createdTagIds: [], record } };
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

    // Created a moment ago by a concurrent request (or an earlier row): read them.
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
  }), { records: run.some((row) => row.wantsRecord) });
  return { written, analyzeEvents };
}
