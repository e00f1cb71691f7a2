import type { Logger } from 'pino';
import { isUnavailable } from '../../db/availability.js';
import { isRetryableConflict } from '../../db/conflicts.js';
import type { Executor } from '../../db/connect.js';
import { inSavepoint } from '../../db/savepoint.js';
import { groupBy } from '../../group-by.js';
import { enqueue, type CompanyAnalyzeEvent } from '../../outbox/repository.js';
import { insertNewLeadsOnCitus, mergeIntoLeadsOnCitus } from '../citus-writes-repository.js';
import { insertNewLeads } from '../new-leads-repository.js';
import { findLeadRecords } from '../read-repository.js';
import { deleteLeads, mergeIntoLeads } from '../write-repository.js';
import { checkReferences, nothingMatched, reportMatch, settleWithoutUpdate, strongestMatch, type References, type StrongestMatch } from './match.js';
import type { Plan, RowPlan, RowRef, RunInput, Step } from './plan.js';
import { findIdentityMatches, type IdentityMatch, type IntakeLookup } from '../lookup-repository.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { lookupForIntake, mergeOfRow, newLeadOf, resolveRow, type Resolution, type Written } from './row-intake.js';
import { writeCompaniesAndTags } from './set-company.js';
import type { RowOutcome, RowResult } from './write-request.js';

// The executor's steps on PostgreSQL (executor.ts runs a group's plan with them): a statement
// writing new leads, a statement merging into existing ones, the lost race, and a row alone in a
// savepoint of its own. Every new lead goes through writeNewLeads, every merge through
// mergeLeads, every lead that lost its race through runLostAgain.

/**
 * A set-based statement (or the lookup of the rows it plans) failed as a whole. It is not in a
 * savepoint of its own (that would cost every request two round trips): the group's
 * transaction runs again one row at a time.
 */
export class SetBasedWriteFailed extends Error {
  constructor(cause: unknown) {
    super('the set-based write of leads failed', { cause });
  }
}

/**
 * The database went away (the call fails, 503), or chose this transaction as a deadlock
 * victim (the whole transaction runs again, its locks released meanwhile): no single row or
 * statement is at fault.
 */
const failsTheTransaction = (error: unknown) => isUnavailable(error) || isRetryableConflict(error);

/** A set-based statement's failure that is not the transaction's becomes SetBasedWriteFailed. */
export const setBased = <T>(work: Promise<T>): Promise<T> =>
  work.catch((error: unknown) => {
    throw failsTheTransaction(error) ? error : new SetBasedWriteFailed(error);
  });

/** A plan being run: where (a transaction, or the pool when it commits alone), its runs, and each run's rows' results as they come. */
export interface Execution {
  db: Executor;
  /** The Citus executor: the leads of one workspace written by src/leads/citus-writes-repository.ts. */
  citus: boolean;
  runs: readonly RunInput[];
  plan: Plan;
  results: RowResult[][];
  log: Logger;
}

/** Runs the plan's steps in order; the rows it rejected get their refusal without a write. */
export async function runPlan(x: Execution): Promise<void> {
  x.plan.rows.forEach((rows, run) => rows.forEach((row, index) => row.kind === 'rejected' && (x.results[run]![index] = { rejected: row.rejected })));
  for (const step of x.plan.steps) {
    if ('alone' in step) {
      const row = x.plan.rows[step.alone.run]![step.alone.index]!;
      await rowAlone(x, step.alone, row.kind === 'alone' ? row.view : undefined);
    } else {
      await runLostAgain(x, await writeStatement(x, step), (ref) => rowAlone(x, ref));
    }
  }
}

/** A row that lost its race since its lookup: its incomplete lead (null: its merge found no lead), and the events of companies it created. */
interface LostRow {
  ref: RowRef;
  leadId: number | null;
  events: readonly CompanyAnalyzeEvent[];
}

/** What a lead write gives a row: its outcome, or its lost race. */
type WriteOutcome = { outcome: RowOutcome } | { lost: LostRow };
type WrittenRow = { ref: RowRef; written: Written; created: { companyId: number | null; tagIds: number[] } };

/**
 * The lost race, for rows of a statement and for a row alone alike: a concurrent request
 * created the person after the lookup (the lead written is incomplete), or deleted the lead
 * to update. Their incomplete leads are deleted (their claimed keys go with them), the events of
 * companies they created are queued as their leads would have, and each row runs again, in order
 * (it then matches).
 */
async function runLostAgain(x: Execution, lost: LostRow[], again: (ref: RowRef) => Promise<unknown>): Promise<void> {
  for (const [workspaceId, rows] of groupBy(lost, ({ ref }) => x.runs[ref.run]!.workspaceId)) {
    await deleteLeads(
      x.db,
      workspaceId,
      rows.flatMap(({ leadId }) => leadId ?? []),
    );
    const trace = (ref: RowRef) => x.runs[ref.run]!.rows[ref.index]!.lead.trace;
    await enqueue(
      x.db,
      workspaceId,
      rows.flatMap(({ ref, events }) => events.map((event) => ({ ...event, trace: trace(ref) }))),
    );
  }
  lost.sort((a, b) => a.ref.run - b.ref.run || a.ref.index - b.ref.index);
  for (const { ref } of lost) await again(ref);
}

/** The one entry that writes new leads: a statement's rows, or a row alone's. */
async function writeNewLeads(x: Execution, rows: readonly WrittenRow[], records: boolean): Promise<WriteOutcome[]> {
  const input = (ref: RowRef) => x.runs[ref.run]!.rows[ref.index]!;
  const leads = rows.map(({ ref, written }) => newLeadOf(x.runs[ref.run]!.workspaceId, input(ref).lead, written));
  const written = x.citus
    ? await insertNewLeadsOnCitus(x.db, x.runs[rows[0]!.ref.run]!.workspaceId, leads, { records, commitsAlone: x.plan.commitsAlone })
    : await insertNewLeads(x.db, leads, { records, commitsAlone: x.plan.commitsAlone });
  return written.map(({ ord, id, complete, record }) => {
    const { ref, created } = rows[ord]!;
    if (!complete) return { lost: { ref, leadId: id, events: rows[ord]!.written.events } };
    const { lead, wantsRecord } = input(ref);
    return {
      outcome: {
        status: 'created',
        leadId: id,
        match: nothingMatched(),
        warnings: lead.warnings,
        createdCompanyId: created.companyId,
        createdTagIds: created.tagIds,
        record: wantsRecord ? record : undefined,
      },
    };
  });
}

/** The one entry that merges rows into the leads they matched: a statement's rows, or a row alone's. */
async function mergeLeads(x: Execution, rows: ReadonlyArray<WrittenRow & { match: StrongestMatch; matches: readonly IdentityMatch[] }>): Promise<WriteOutcome[]> {
  const merges = rows.map(({ ref, match, matches, written }) => mergeOfRow(x.runs[ref.run]!.workspaceId, match, x.runs[ref.run]!.rows[ref.index]!.lead, matches, written));
  const writes = merges.map(({ merge }) => merge);
  const merged = new Map(
    (x.citus ? await mergeIntoLeadsOnCitus(x.db, writes[0]!.workspaceId, writes) : await mergeIntoLeads(x.db, writes)).map(({ ord, ...record }) => [ord, record]),
  );
  return rows.map(({ ref, match, written, created }, ord) => {
    const record = merged.get(ord);
    if (!record) return { lost: { ref, leadId: null, events: written.events } };
    return {
      outcome: {
        status: 'updated',
        leadId: match.leadId,
        match: reportMatch(match),
        warnings: merges[ord]!.warnings,
        createdCompanyId: created.companyId,
        createdTagIds: created.tagIds,
        record,
      },
    };
  });
}

/**
 * A statement's rows: first the companies and tags they need that do not exist yet
 * (writeCompaniesAndTags), then every row's lead in one statement. Returns the rows that lost
 * their race.
 */
async function writeStatement(x: Execution, step: Extract<Step, { write: unknown }>): Promise<LostRow[]> {
  const { workspaceId, options } = x.runs[step.rows[0]!.run]!;
  const plans = step.rows.map((ref) => x.plan.rows[ref.run]![ref.index] as Extract<RowPlan, { kind: 'create' | 'merge' }>);
  const outcomes = await setBased(
    (async () => {
      const written = (await writeCompaniesAndTags(x.db, workspaceId, plans, options.enrich)).map((written, position) => ({
        ref: step.rows[position]!,
        written,
        created: { companyId: null, tagIds: [] },
      }));
      if (step.write === 'create')
        return writeNewLeads(
          x,
          written,
          step.rows.some((ref) => x.runs[ref.run]!.rows[ref.index]!.wantsRecord),
        );
      return mergeLeads(
        x,
        written.map((row, position) => ({ ...row, ...(plans[position] as Extract<RowPlan, { kind: 'merge' }>) })),
      );
    })(),
  );
  return outcomes.flatMap((outcome, position) => {
    const ref = step.rows[position]!;
    if ('lost' in outcome) return [outcome.lost];
    x.results[ref.run]![ref.index] = outcome;
    return [];
  });
}

const MATCH_ATTEMPTS = 3;

/**
 * One row in its own savepoint: a failing row undoes only itself; a dry-run row is always
 * undone (its record is read before that). `view`: the row's part of its run's lookup, when it
 * is all the row needs.
 */
async function rowAlone(x: Execution, ref: RowRef, view?: IntakeLookup): Promise<void> {
  const { workspaceId, rows, options, dryRun } = x.runs[ref.run]!;
  const row = rows[ref.index]!;
  const result = await inSavepoint(x.db, 'intake_row', !dryRun, async () => {
    const lookup = view ?? (await lookupForIntake(x.db, workspaceId, row.lead));
    const outcome = await attemptRow(x, ref, lookup, checkReferences(lookup, row.lead, options), 1);
    // Read inside the savepoint: what this row left, before a later row changes the lead.
    if (row.wantsRecord && !outcome.record) [outcome.record] = await findLeadRecords(x.db, workspaceId, [outcome.leadId]);
    return { outcome };
  }).catch((error: unknown): RowResult => {
    if (error instanceof RowRejected || error instanceof DuplicateRejected) return { rejected: error };
    if (failsTheTransaction(error)) throw error;
    x.log.error({ err: error }, 'lead row failed unexpectedly');
    return { unexpected: error };
  });
  x.results[ref.run]![ref.index] = result;
}

/**
 * A row alone matched, then created, updated or skipped. Its company and tags are written only
 * once it is known to create or update a lead, and only once: a lost race runs it again with
 * them (`resolved`), reading its keys afresh.
 */
async function attemptRow(x: Execution, ref: RowRef, lookup: IntakeLookup, references: References, attempt: number, resolved?: Resolution): Promise<RowOutcome> {
  const { workspaceId, rows, options } = x.runs[ref.run]!;
  const { lead } = rows[ref.index]!;
  // The first attempt matches by the lookup; after a lost race, the keys are read again.
  const matches = attempt === 1 ? lookup.matches : await findIdentityMatches(x.db, workspaceId, lead.identities);
  const match = strongestMatch(lead.identities, matches);
  const settled = match && settleWithoutUpdate(match, lead, options);
  if (settled) return settled;
  const resolution = resolved ?? (await resolveRow(x.db, workspaceId, lead, lookup, references, options));
  const row: WrittenRow = {
    ref,
    written: { companyId: resolution.company?.id ?? null, tagIds: resolution.tagIds, events: resolution.events },
    created: { companyId: resolution.company?.created ? resolution.company.id : null, tagIds: resolution.createdTagIds },
  };
  const written = (match ? await mergeLeads(x, [{ ...row, match, matches }]) : await writeNewLeads(x, [row], true))[0]!;
  if ('outcome' in written) return written.outcome;
  if (attempt >= MATCH_ATTEMPTS) throw new Error('lead identity kept changing under concurrent writes');
  let outcome: RowOutcome | undefined;
  // The next attempt's lead carries its companies' events: the lost race queues none of its own.
  await runLostAgain(x, [{ ...written.lost, events: [] }], async () => (outcome = await attemptRow(x, ref, lookup, references, attempt + 1, resolution)));
  return outcome!;
}
