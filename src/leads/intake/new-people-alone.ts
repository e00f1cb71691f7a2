import type { Logger } from 'pino';
import { isUnavailable } from '../../db/availability.js';
import type { Executor } from '../../db/connect.js';
import { insertNewLeadsCommitted } from '../new-leads-repository.js';
import { planRuns, type NewPerson, type WorkspaceRun } from './across-workspaces.js';
import { readyNewLeads, type BulkPlan } from './bulk-path.js';
import { answerRun, workspaceRunOf, type Run } from './group-runs.js';
import { createdOutcome, type RowResult } from './intake-engine.js';
import type { Settled, WriteRequest } from './write-request.js';

// A write group whose rows all create people whose companies and tags exist (what POST /leads
// mostly is under load) needs no transaction: after its lookup, one statement writes every
// lead, its keys, tags and events and the day's counts, and commits on its own. Two round trips
// where the group's transaction costs five (BEGIN, lookup, write, day's counts, COMMIT). The
// lookup is read before any transaction, so a group that turns out to need one (an existing
// person, a tag to create) runs it with the lookup already read (group-transaction.ts).

/**
 * A group whose lookup is read before any transaction (its `runs`, from lookedUpFirst): each
 * request's outcome when its rows were all people to create and one statement wrote them;
 * otherwise what its transaction starts from: the runs' plans, or none when the lookup or the
 * write failed (the transaction reads afresh, and settles a failure row by row). An outage
 * is thrown: no transaction would do better.
 */
export async function writeNewPeopleAlone(
  db: Executor,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  runs: readonly Run[],
  log: Logger,
): Promise<{ settled: Settled[] } | { planned?: Map<number, BulkPlan> }> {
  const workspaceRuns = runs.map(workspaceRunOf(requests));
  const lookedUp = await lookUpRuns(db, workspaceRuns).catch(unlessUnavailable);
  if (!lookedUp?.newPeople) return { planned: lookedUp?.plans };
  const results = await writeNewPeople(db, workspaceRuns, lookedUp.newPeople).catch((error: unknown) => {
    unlessUnavailable(error);
    log.debug({ err: error, requests: requests.length }, 'the write of new people failed as a whole (written since the lookup?); running the group as a transaction');
    return null;
  });
  if (!results) return {};
  const settled: Settled[] = new Array(requests.length);
  runs.forEach((run, position) => answerRun(requests, run, results[position]!, settled));
  return { settled };
}

const unlessUnavailable = (error: unknown): null => {
  if (isUnavailable(error)) throw error;
  return null;
};

/**
 * The lookup of a group's runs (each of a workspace no other run is of; several workspaces
 * only on plain PostgreSQL), read in one statement: each run's plan by workspace, and the
 * people to create when every row of every run creates one whose company and tags exist
 * (otherwise null).
 */
async function lookUpRuns(db: Executor, runs: readonly WorkspaceRun[]): Promise<{ plans: Map<number, BulkPlan>; newPeople: NewPerson[] | null }> {
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
 * took since the lookup, a company or tag deleted meanwhile).
 */
async function writeNewPeople(db: Executor, runs: readonly WorkspaceRun[], people: readonly NewPerson[]): Promise<RowResult[][]> {
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
