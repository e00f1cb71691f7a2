import { groupBy } from '../../group-by.js';
import type { WorkspaceRun } from './across-workspaces.js';
import type { Settled, WriteRequest } from './write-request.js';
import type { RowResult } from './intake-engine.js';
import { sameOptions } from './options.js';

// A write group's runs: the requests whose rows go through the intake engine as one set, and
// how each member's answer is shaped from the run's results (group-transaction.ts).

/**
 * The group's runs when its lookup is read before any transaction (new-people-alone.ts): no
 * request sends an Idempotency-Key (its claim decides first whether the request runs at all),
 * none is a dry run, every row is answered with its lead (POST /leads), each workspace has one
 * run, and several workspaces only where runs of several workspaces may share statements.
 * Otherwise null.
 */
export function lookedUpFirst(requests: ReadonlyArray<WriteRequest<unknown>>, acrossWorkspaces: boolean): Run[] | null {
  if (!requests.every((request) => request.idempotency === null && !request.dryRun && request.rows.every((row) => row.wantsRecord))) return null;
  const runs = runsOf(requests, [...requests.keys()]);
  const workspaces = new Set(runs.map((run) => run.first.workspaceId));
  return workspaces.size === runs.length && (runs.length === 1 || acrossWorkspaces) ? runs : null;
}

/** Same workspace and switches: rows of consecutive such requests run through the engine as one set. */
const sameRun = (a: WriteRequest<unknown>, b: WriteRequest<unknown>) => a.workspaceId === b.workspaceId && a.dryRun === b.dryRun && sameOptions(a.options, b.options);

/** Requests whose rows run through the engine as one set: their indexes, and the first, whose workspace and switches they share. */
export interface Run {
  first: WriteRequest<unknown>;
  members: number[];
}

/**
 * The requests to run (indexes, in arrival order) as runs: a workspace's requests together, in
 * their order (another workspace's requests between them change nothing for them), split where
 * the switches change.
 */
export function runsOf(requests: ReadonlyArray<WriteRequest<unknown>>, running: readonly number[]): Run[] {
  const byWorkspace = groupBy(running, (index) => requests[index]!.workspaceId);
  const runs: Run[] = [];
  for (const index of [...byWorkspace.values()].flat()) {
    const last = runs.at(-1);
    if (last && sameRun(last.first, requests[index]!)) last.members.push(index);
    else runs.push({ first: requests[index]!, members: [index] });
  }
  return runs;
}

/**
 * The runs that go through runIntakeAcrossWorkspaces together: those of a workspace no other
 * run of the group is of, dry runs aside (each of their rows is undone on its own). None unless
 * at least two: one workspace's run costs the same either way.
 */
export function runsAcrossWorkspaces(runs: readonly Run[]): Run[] {
  const runsOfWorkspace = new Map<number, number>();
  for (const { first } of runs) runsOfWorkspace.set(first.workspaceId, (runsOfWorkspace.get(first.workspaceId) ?? 0) + 1);
  const shared = runs.filter(({ first }) => !first.dryRun && runsOfWorkspace.get(first.workspaceId) === 1);
  return shared.length >= 2 ? shared : [];
}

/** A run as the intake engine takes it: its workspace, its members' rows in order, its switches. */
export const workspaceRunOf =
  (requests: ReadonlyArray<WriteRequest<unknown>>) =>
  ({ first, members }: Run): WorkspaceRun => ({ workspaceId: first.workspaceId, rows: members.flatMap((index) => requests[index]!.rows), options: first.options });

/** Shapes each member's share of the run's row results into its answer (or its refusal). */
export function answerRun(requests: ReadonlyArray<WriteRequest<unknown>>, { members }: Run, results: readonly RowResult[], settled: Array<Settled | undefined>): void {
  let offset = 0;
  for (const index of members) {
    const request = requests[index]!;
    const own = results.slice(offset, offset + request.rows.length);
    offset += request.rows.length;
    try {
      settled[index] = { result: { ...request.answer(own), replayed: false } };
    } catch (error) {
      settled[index] = { error };
    }
  }
}
