import type { Executor } from '../../db/connect.js';
import { insertNewLeadsCommitted } from '../new-leads-repository.js';
import { planRuns, type WorkspaceRun } from './across-workspaces.js';
import { readyNewLeads, type BulkPlan, type ReadyNewLead } from './bulk-path.js';
import { createdOutcome, type RowResult } from './intake-engine.js';

// A write group whose rows all create people whose companies and tags exist (what POST /leads
// mostly is under load) needs no transaction: after its lookup, one statement writes every
// lead, its keys, tags and events and the day's counts, and commits on its own. Two round trips
// where the group's transaction costs five (BEGIN, lookup, write, day's counts, COMMIT). The
// lookup is read before any transaction, so a group that turns out to need one (an existing
// person, a tag to create) runs it with the lookup already read (group-transaction.ts).

/** A row that creates a person, by its run and as the new-lead statement writes it. */
export type NewPerson = ReadyNewLead & { run: number };

/**
 * The lookup of a group's runs (each of a workspace no other run is of; several workspaces
 * only on plain PostgreSQL), read in one statement: each run's plan by workspace, and the
 * people to create when every row of every run creates one whose company and tags exist
 * (otherwise null).
 */
export async function lookUpRuns(db: Executor, runs: readonly WorkspaceRun[]): Promise<{ plans: Map<number, BulkPlan>; newPeople: NewPerson[] | null }> {
  const plans = await planRuns(db, runs);
  const newPeople: NewPerson[] = [];
  for (const [position, run] of runs.entries()) {
    const people = readyNewLeads(plans.get(run.workspaceId)!, run.workspaceId);
    if (!people) return { plans, newPeople: null };
    newPeople.push(...people.map((person) => ({ run: position, ...person })));
  }
  return { plans, newPeople };
}

/**
 * Writes the people lookUpRuns found to create, committed by one statement; returns each
 * run's results. Throws when the statement fails, having written nothing (a key another writer
 * took since the lookup, a company or tag deleted meanwhile): the group then runs the
 * transactional way, which settles each row.
 */
export async function writeNewPeople(db: Executor, runs: readonly WorkspaceRun[], people: readonly NewPerson[]): Promise<RowResult[][]> {
  const written = await insertNewLeadsCommitted(
    db,
    people.map(({ lead }) => lead),
  );
  const results: RowResult[][] = runs.map(() => []);
  // Every lead is complete: a key held elsewhere fails the statement instead.
  for (const { ord, id, record } of written) {
    const { run, row } = people[ord]!;
    results[run]![row.index] = { outcome: createdOutcome(row, id, record) };
  }
  return results;
}
