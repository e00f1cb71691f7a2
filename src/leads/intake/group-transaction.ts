import type { Logger } from 'pino';
import { inTransactionRetried } from '../../db/conflicts.js';
import type { Db, Executor } from '../../db/connect.js';
import { claimKeys, reusedKey } from '../../idempotency/claims.js';
import { settleRecords } from '../../idempotency/repository.js';
import { addDailyCounts, type IntakeTally } from '../daily-counts-repository.js';
import { runIntakeAcrossWorkspaces } from './across-workspaces.js';
import { answerRun, lookedUpFirst, runsAcrossWorkspaces, runsOf, workspaceRunOf, type Run } from './group-runs.js';
import type { BulkPlan } from './bulk-path.js';
import { writeNewPeopleAlone } from './new-people-alone.js';
import { runIntake, SetBasedWriteFailed, type RowResult } from './intake-engine.js';
import { RUN_AGAIN, type GroupOutcome, type Settled, type WriteRequest, type WriteResult } from './write-request.js';

// The transaction of one write group (src/leads/intake/write-groups.ts): every request's
// Idempotency-Key claimed, their rows run through the intake engine, each request's answer
// shaped and stored, one commit. Each request gets exactly the answer it would have got
// alone: its own claim, its rows' results shaped by its own operation, its own refusal. What
// the rows did is added to each workspace's daily counts by the same transaction, so the
// counts hold exactly the writes that were committed. A group of new people only needs no
// transaction: one statement writes and counts them (new-people-alone.ts).

/**
 * Runs the requests as one transaction and returns each one's outcome, in their order; a
 * group whose lookup is read first (lookedUpFirst) and finds only new people to create is
 * written by one statement instead, and runs as a transaction only when that fails. A
 * set-based write that failed as a whole reruns the transaction one row at a time, so only
 * the row at fault fails. Throws when the transaction itself fails (the database went away,
 * or a failure no row's savepoint contains): the caller decides whose failure it is.
 * `commits`: called when every statement but the COMMIT is done, or once the one statement
 * has committed (the write groups start the next group then); it may be called again when the
 * transaction runs again. `acrossWorkspaces`:
 * runs of several workspaces may share statements (runIntakeAcrossWorkspaces; never on Citus).
 */
export async function runGroupTransaction(
  db: Db,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  log: Logger,
  { commits = () => {}, acrossWorkspaces = false }: { commits?: () => void; acrossWorkspaces?: boolean } = {},
): Promise<GroupOutcome[]> {
  const runs = lookedUpFirst(requests, acrossWorkspaces);
  const alone = runs ? await writeNewPeopleAlone(db, requests, runs, log) : {};
  if ('settled' in alone) {
    commits();
    return alone.settled;
  }
  const { planned } = alone;

  const run = (setBased: boolean) =>
    inTransactionRetried(db, async (trx) => {
      const outcomes = await runGroup(trx, requests, log, { setBased, acrossWorkspaces, planned: setBased ? planned : undefined });
      commits();
      return outcomes;
    });
  try {
    return await run(true);
  } catch (error) {
    if (!(error instanceof SetBasedWriteFailed)) throw error;
    log.warn({ err: error.cause, requests: requests.length }, 'set-based write of leads failed; running the group again one row at a time');
    return run(false);
  }
}

/** Adds the rows' outcomes to the workspace's tally: a row without an outcome failed (refused or unexpectedly). */
function tallyRows(tallies: Map<number, IntakeTally>, workspaceId: number, results: readonly RowResult[]): void {
  let tally = tallies.get(workspaceId);
  if (!tally) tallies.set(workspaceId, (tally = { created: 0, updated: 0, skipped: 0, failed: 0 }));
  for (const result of results) tally['outcome' in result ? result.outcome.status : 'failed'] += 1;
}

const keyOf = (request: WriteRequest<unknown>) => request.idempotency && `${request.idempotency.apiKeyId}\u0000${request.idempotency.key}`;

/**
 * `setBased` off runs every row alone; `acrossWorkspaces` lets runs of several workspaces share
 * statements too; `planned`: each run's plan by workspace, when its lookup was read before the
 * transaction (lookedUpFirst: then every request runs, one run per workspace).
 */
async function runGroup(
  trx: Executor,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  log: Logger,
  { setBased, acrossWorkspaces, planned }: { setBased: boolean; acrossWorkspaces: boolean; planned: ReadonlyMap<number, BulkPlan> | undefined },
): Promise<GroupOutcome[]> {
  const settled: Array<Settled | undefined> = new Array(requests.length);
  // A key sent again within the group follows its first request, as it would have waited on its claim.
  const leaders = new Map<string, number>();
  const followers = new Map<number, number>();
  for (const [index, request] of requests.entries()) {
    const key = keyOf(request);
    if (key === null) continue;
    const leader = leaders.get(key);
    if (leader === undefined) leaders.set(key, index);
    else followers.set(index, leader);
  }

  const keyed = requests.flatMap((request, index) => (request.idempotency && !followers.has(index) ? [{ index, key: request.idempotency }] : []));
  const claims = await claimKeys(
    trx,
    keyed.map(({ key }) => key),
  );
  keyed.forEach(({ index }, position) => {
    const claim = claims[position]!;
    if ('replay' in claim) settled[index] = { result: { ...claim.replay, replayed: true } };
    if ('refused' in claim) settled[index] = { error: claim.refused };
  });

  const tallies = new Map<number, IntakeTally>();
  const settleRun = (run: Run, results: readonly RowResult[]) => {
    if (!run.first.dryRun) tallyRows(tallies, run.first.workspaceId, results);
    answerRun(requests, run, results, settled);
  };

  const runs = runsOf(
    requests,
    requests.flatMap((_, index) => (settled[index] || followers.has(index) ? [] : [index])),
  );
  const shared = setBased && acrossWorkspaces ? runsAcrossWorkspaces(runs) : [];
  if (shared.length > 0) {
    const results = await runIntakeAcrossWorkspaces(trx, shared.map(workspaceRunOf(requests)), log, planned);
    shared.forEach((run, position) => settleRun(run, results[position]!));
  }
  for (const run of runs) {
    if (shared.includes(run)) continue;
    const { first } = run;
    const { workspaceId, rows, options } = workspaceRunOf(requests)(run);
    settleRun(run, await runIntake(trx, workspaceId, rows, options, first.dryRun, log, setBased, planned?.get(workspaceId)));
  }

  // Only answers below 400 are kept; a refused request's claim goes (errors are never stored).
  const ran = keyed.filter((_, position) => 'runs' in claims[position]!);
  const answered = ran.flatMap(({ index, key }) => {
    const outcome = settled[index]!;
    return 'result' in outcome ? [{ ...key, status: outcome.result.status, body: outcome.result.body }] : [];
  });
  const failed = ran.filter(({ index }) => 'error' in settled[index]!).map(({ key }) => key);
  await settleRecords(trx, answered, failed);
  await addDailyCounts(trx, tallies);

  // A follower of a request that ran and succeeded replays its answer (or is refused for
  // another body); otherwise the key is free again, or holds an older answer: it runs anew.
  return requests.map((request, index) => {
    const leader = followers.get(index);
    if (leader === undefined) return settled[index]!;
    const leaderRan = ran.some((entry) => entry.index === leader) && 'result' in settled[leader]!;
    if (!leaderRan) return RUN_AGAIN;
    if (request.idempotency!.fingerprint !== requests[leader]!.idempotency!.fingerprint) return { error: reusedKey() };
    return { result: { ...(settled[leader] as { result: WriteResult<unknown> }).result, replayed: true } };
  });
}
