import type { Logger } from 'pino';
import type { Executor } from '../../db/connect.js';
import { groupBy } from '../../group-by.js';
import { insertNewLeadsAcrossWorkspaces } from '../new-leads-repository.js';
import { deleteLeads, mergeIntoLeadsAcrossWorkspaces } from '../write-repository.js';
import { planBulkRows, readyMerge, readyNewLeads, type BulkPlan, type BulkRow, type ReadyMerge, type ReadyNewLead } from './bulk-path.js';
import { createdOutcome, failsTheTransaction, mergedOutcome, runIntake, SetBasedWriteFailed, type IntakeRow, type RowResult } from './intake-engine.js';
import { lookupForBatch, lookupsAcrossWorkspaces } from './lookup.js';
import type { IntakeOptions } from './options.js';

// The runs of several workspaces in one write group, on plain PostgreSQL. Each workspace's run
// through the intake engine costs statements of its own (a lookup, a write), so a group of ten
// workspaces' calls would send ten of each where one workspace's ten calls send one: here
// their lookups are one statement, the new people of every run that only creates people whose
// companies and tags exist are one statement too, and so are the updates of every run that only
// updates the people it matches with companies and tags that exist. Any other run goes through
// the engine as before, with its part of the shared lookup. On Citus every statement must name its
// workspace (one shard): there the group runs each workspace on its own (group-transaction.ts).

/** One workspace's run of a group: no other run of the group is of its workspace, and none is a dry run. */
export interface WorkspaceRun {
  workspaceId: number;
  rows: readonly IntakeRow[];
  options: IntakeOptions;
}

/** A row that creates a person, by its run and as the new-lead statement writes it. */
export type NewPerson = ReadyNewLead & { run: number };

const setBasedFailure = (error: unknown) => {
  throw failsTheTransaction(error) ? error : new SetBasedWriteFailed(error);
};

/**
 * Each run's plan (planBulkRows) by workspace, from one lookup of every run's rows (one
 * statement; a single run's is lookupForBatch, which names its workspace).
 */
export async function planRuns(db: Executor, runs: readonly WorkspaceRun[]): Promise<Map<number, BulkPlan>> {
  const leadsOf = (run: WorkspaceRun) => run.rows.map((row) => row.lead);
  const lookups =
    runs.length === 1
      ? new Map([[runs[0]!.workspaceId, await lookupForBatch(db, runs[0]!.workspaceId, leadsOf(runs[0]!))]])
      : await lookupsAcrossWorkspaces(
          db,
          runs.map((run) => ({ workspaceId: run.workspaceId, leads: leadsOf(run) })),
        );
  const plans = new Map<number, BulkPlan>();
  for (const run of runs) plans.set(run.workspaceId, await planBulkRows(db, run.workspaceId, leadsOf(run), run.options, lookups.get(run.workspaceId)));
  return plans;
}

/**
 * Runs every run inside the caller's transaction, as runIntake would one by one; returns each
 * run's results. `planned`: the runs' plans (planRuns), when the caller read them already.
 */
export async function runIntakeAcrossWorkspaces(db: Executor, runs: readonly WorkspaceRun[], log: Logger, planned?: ReadonlyMap<number, BulkPlan>): Promise<RowResult[][]> {
  const plans = planned ?? (await planRuns(db, runs).catch(setBasedFailure));

  const results: RowResult[][] = runs.map(() => []);
  const ready: NewPerson[] = [];
  const merges: Array<ReadyMerge & { run: number }> = [];
  const onTheirOwn: Array<{ position: number; planned: BulkPlan }> = [];
  for (const [position, run] of runs.entries()) {
    const plan = plans.get(run.workspaceId)!;
    const people = readyNewLeads(plan, run.workspaceId);
    // Merges are planned only for a run of nothing but updates: no other run can share the merge.
    const merged = plan.plan.every((row) => row?.kind === 'update') ? plan.plan.map(readyMerge) : null;
    if (people) ready.push(...people.map((person) => ({ run: position, ...person })));
    else if (merged?.every((merge): merge is ReadyMerge => merge !== null)) merged.forEach((merge) => merges.push({ run: position, ...merge }));
    else onTheirOwn.push({ position, planned: plan });
  }

  /** Runs rows of a run again one by one: their person was created, or their lead deleted, by a concurrent request since the lookup. */
  const runAgainAlone = async (position: number, rows: readonly BulkRow[]) => {
    const run = runs[position]!;
    const again = await runIntake(
      db,
      run.workspaceId,
      rows.map((row) => run.rows[row.index]!),
      run.options,
      false,
      log,
      false,
    );
    rows.forEach((row, index) => (results[position]![row.index] = again[index]!));
  };

  const written =
    ready.length === 0
      ? []
      : await insertNewLeadsAcrossWorkspaces(
          db,
          ready.map(({ lead }) => lead),
        ).catch(setBasedFailure);
  for (const { ord, id, complete, record } of written) {
    const { run, row } = ready[ord]!;
    if (complete) results[run]![row.index] = { outcome: createdOutcome(row, id, runs[run]!.rows[row.index]!.wantsRecord ? record : undefined) };
  }
  // A person a concurrent request created since the lookup: undone, and run again alone (it then matches).
  const lost = groupBy(
    written.filter(({ complete }) => !complete),
    ({ ord }) => ready[ord]!.run,
    ({ ord, id }) => ({ row: ready[ord]!.row, leadId: id }),
  );
  for (const [position, rows] of lost) {
    await deleteLeads(
      db,
      runs[position]!.workspaceId,
      rows.map(({ leadId }) => leadId),
    );
    await runAgainAlone(
      position,
      rows.map(({ row }) => row),
    );
  }

  const updated =
    merges.length === 0
      ? []
      : await mergeIntoLeadsAcrossWorkspaces(
          db,
          merges.map(({ run, merge }) => ({ ...merge, workspaceId: runs[run]!.workspaceId })),
        ).catch(setBasedFailure);
  for (const { ord, ...record } of updated) {
    const { run, row, warnings } = merges[ord]!;
    results[run]![row.index] = { outcome: mergedOutcome(row, warnings, record) };
  }
  // A lead a concurrent request deleted since the lookup: nothing of its row was written; it runs again alone (it then matches again).
  const found = new Set(updated.map(({ ord }) => ord));
  const vanished = groupBy(
    merges.filter((_, ord) => !found.has(ord)),
    ({ run }) => run,
    ({ row }) => row,
  );
  for (const [position, rows] of vanished) await runAgainAlone(position, rows);

  for (const { position, planned } of onTheirOwn) {
    const run = runs[position]!;
    results[position] = await runIntake(db, run.workspaceId, run.rows, run.options, false, log, true, planned);
  }
  return results;
}
