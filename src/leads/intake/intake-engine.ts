import type { Logger } from 'pino';
import { isUnavailable } from '../../db/availability.js';
import { isRetryableConflict } from '../../db/conflicts.js';
import type { Executor } from '../../db/connect.js';
import { inSavepoint } from '../../db/savepoint.js';
import { enqueue } from '../../outbox/repository.js';
import { planBulkRows, writeBulkRows, type BulkPlan, type BulkRow } from './bulk-path.js';
import type { IntakeLookup } from '../lookup-repository.js';
import { nothingMatched, type StrongestMatch } from './match.js';
import type { PreparedLead } from './prepare.js';
import { findLeadRecords } from '../read-repository.js';
import type { LeadRecord } from '../columns.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { intakeLead, updatedOutcome, type RowOutcome } from './row-intake.js';
import type { IntakeOptions } from './options.js';
import { deleteLeads } from '../write-repository.js';

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
export type RowResult = { outcome: RowOutcome } | { rejected: RowRejected | DuplicateRejected } | { unexpected: unknown };

/**
 * A set-based write (or the lookup of the rows it plans) failed as a whole. It is not in a savepoint of its own (that would cost
 * every request two round trips): the caller reruns the whole transaction one row at a time.
 */
export class SetBasedWriteFailed extends Error {
  constructor(cause: unknown) {
    super('the set-based write of leads failed', { cause });
  }
}

/**
 * Runs the rows in order inside the caller's transaction, an earlier row visible to later
 * ones, and reports each. Rows that need decisions (a match to skip or refuse, a company to
 * fill, a rejected reference, a key shared with another row, a lead another row of the run
 * updates first) run one by one in a savepoint each. Consecutive rows that certainly create a
 * new person, or that certainly update the lead they match (bulk-path.ts), are written
 * set-based, a run of them in two statements; the outcome is the same as running them one by
 * one. A dry run, or a run with `setBased` off, runs every row alone (a dry run's undone before the next). `planned`: the
 * rows' plan, when the caller made it (runIntakeAcrossWorkspaces, from a lookup shared with other workspaces). Throws when the database is
 * unreachable (the whole call fails) and SetBasedWriteFailed.
 */
export async function runIntake(
  db: Executor,
  workspaceId: number,
  rows: readonly IntakeRow[],
  options: IntakeOptions,
  dryRun: boolean,
  log: Logger,
  setBased = true,
  planned?: BulkPlan,
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

  // The lookup of every row at once fails for all of them: rerun, each row's lookup is its own.
  const { plan, lookups } =
    planned ??
    (await planBulkRows(
      db,
      workspaceId,
      rows.map((row) => row.lead),
      options,
    ).catch((error: unknown) => {
      throw failsTheTransaction(error) ? error : new SetBasedWriteFailed(error);
    }));
  views = lookups;
  let run: BulkRow[] = [];
  const flush = async () => {
    if (run.length > 0) await writeRun(db, workspaceId, run, rows, options, results, alone);
    run = [];
  };
  for (const index of rows.keys()) {
    const bulk = plan[index];
    if (bulk) {
      // A run holds rows of one kind, so its events are written in the rows' order.
      if (run.length > 0 && run[0]!.kind !== bulk.kind) await flush();
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
export const failsTheTransaction = (error: unknown) => isUnavailable(error) || isRetryableConflict(error);

/**
 * One row in its own savepoint: a failing row undoes only itself; a dry-run row is always
 * undone (its record is read before that). `prefetched`: the row's part of the run's lookup,
 * when it is all the row needs.
 */
async function intakeRowAlone(
  db: Executor,
  workspaceId: number,
  row: IntakeRow,
  options: IntakeOptions,
  dryRun: boolean,
  log: Logger,
  prefetched?: IntakeLookup,
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

/** The outcome of a bulk row that created its person (`record`: the lead as stored, when the statement read it back). */
export const createdOutcome = (row: BulkRow, leadId: number, record: LeadRecord | undefined): RowOutcome => ({
  status: 'created',
  leadId,
  match: nothingMatched(),
  warnings: row.lead.warnings,
  createdCompanyId: null,
  createdTagIds: [],
  record,
});

/** The outcome of a bulk row that updated the lead it matched (`record`: the lead as stored right after the merge). */
export const mergedOutcome = (row: { match: StrongestMatch }, warnings: string[], record: LeadRecord): RowOutcome =>
  updatedOutcome(row.match, warnings, record, { companyId: null, tagIds: [] });

/**
 * Writes a run of bulk rows: first the companies and tags they need that do not exist yet,
 * then every new lead with its match keys, tags and events in one statement, then every
 * update in one statement. A new lead that lost one of its keys to a concurrent request
 * meanwhile is undone and its row runs alone (it then matches), as does the row of an update
 * whose lead was deleted meanwhile (it then matches again).
 */
async function writeRun(
  db: Executor,
  workspaceId: number,
  run: BulkRow[],
  rows: readonly IntakeRow[],
  options: IntakeOptions,
  results: RowResult[],
  alone: (index: number) => Promise<void>,
): Promise<void> {
  const records = run.some((row) => row.kind === 'create' && rows[row.index]!.wantsRecord);
  const { created, merged, vanished, analyzeEvents } = await writeBulkRows(db, workspaceId, run, options, records).catch((error: unknown) => {
    throw failsTheTransaction(error) ? error : new SetBasedWriteFailed(error);
  });

  const lost: BulkRow[] = [];
  for (const { row, id, complete, record } of created) {
    if (complete) {
      results[row.index] = { outcome: createdOutcome(row, id, record) };
    } else {
      lost.push(row);
    }
  }
  for (const { row, record, warnings } of merged) results[row.index] = { outcome: mergedOutcome(row, warnings, record) };
  lost.push(...vanished);
  if (lost.length === 0) return;
  // A concurrent request created one of these people after the lookup, or deleted the lead one
  // updates: undo the new leads (their claimed keys go with them), keep the events of companies
  // these rows created, and run them again alone, in order.
  await deleteLeads(
    db,
    workspaceId,
    created.filter((lead) => !lead.complete).map((lead) => lead.id),
  );
  lost.sort((a, b) => a.index - b.index);
  await enqueue(
    db,
    workspaceId,
    lost.flatMap((row) => (analyzeEvents.get(row.index) ?? []).map((event) => ({ ...event, trace: row.lead.trace }))),
  );
  for (const row of lost) await alone(row.index);
}
