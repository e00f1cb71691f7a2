import type { Logger } from 'pino';
import type { Executor } from '../../db/connect.js';
import { groupBy } from '../../group-by.js';
import { insertNewLeadsAcrossWorkspaces, type NewLeadOf } from '../new-leads-repository.js';
import { deleteLeads } from '../write-repository.js';
import { planBulkRows, readyNewLead, type BulkPlan, type BulkRow } from './bulk-path.js';
import { createdOutcome, failsTheTransaction, runIntake, SetBasedWriteFailed, type IntakeRow, type RowResult } from './intake-engine.js';
import { lookupsAcrossWorkspaces } from './lookup.js';
import type { IntakeOptions } from './options.js';

// The runs of several workspaces in one write group, on plain PostgreSQL. Each workspace's run
// through the intake engine costs statements of its own (a lookup, a write), so a group of ten
// workspaces' calls would send ten of each where one workspace's ten calls send one: here
// their lookups are one statement, and the new people of every run that only creates people
// whose companies and tags exist are one statement too. Any other run goes through the engine
// as before, with its part of the shared lookup. On Citus every statement must name its
// workspace (one shard): there the group runs each workspace on its own (group-transaction.ts).

/** One workspace's run of a group: no other run of the group is of its workspace, and none is a dry run. */
export interface WorkspaceRun {
  workspaceId: number;
  rows: readonly IntakeRow[];
  options: IntakeOptions;
}

const setBasedFailure = (error: unknown) => {
  throw failsTheTransaction(error) ? error : new SetBasedWriteFailed(error);
};

/** Runs every run inside the caller's transaction, as runIntake would one by one; returns each run's results. */
export async function runIntakeAcrossWorkspaces(db: Executor, runs: readonly WorkspaceRun[], log: Logger): Promise<RowResult[][]> {
  const lookups = await lookupsAcrossWorkspaces(
    db,
    runs.map((run) => ({ workspaceId: run.workspaceId, leads: run.rows.map((row) => row.lead) })),
  ).catch(setBasedFailure);

  const results: RowResult[][] = runs.map(() => []);
  const ready: Array<{ run: number; row: BulkRow; lead: NewLeadOf }> = [];
  const onTheirOwn: Array<{ position: number; planned: BulkPlan }> = [];
  for (const [position, run] of runs.entries()) {
    const planned = await planBulkRows(
      db,
      run.workspaceId,
      run.rows.map((row) => row.lead),
      run.options,
      lookups.get(run.workspaceId),
    );
    const leads = planned.plan.map(readyNewLead);
    if (leads.every((lead) => lead !== null))
      leads.forEach((lead, index) => ready.push({ run: position, row: planned.plan[index]!, lead: { ...lead, workspaceId: run.workspaceId } }));
    else onTheirOwn.push({ position, planned });
  }

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
    const run = runs[position]!;
    await deleteLeads(
      db,
      run.workspaceId,
      rows.map(({ leadId }) => leadId),
    );
    const again = await runIntake(
      db,
      run.workspaceId,
      rows.map(({ row }) => run.rows[row.index]!),
      run.options,
      false,
      log,
      false,
    );
    rows.forEach(({ row }, index) => (results[position]![row.index] = again[index]!));
  }

  for (const { position, planned } of onTheirOwn) {
    const run = runs[position]!;
    results[position] = await runIntake(db, run.workspaceId, run.rows, run.options, false, log, true, planned);
  }
  return results;
}
