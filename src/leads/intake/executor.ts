import type { Logger } from 'pino';
import { isUnavailable } from '../../db/availability.js';
import { inTransactionRetried } from '../../db/conflicts.js';
import type { Db, Executor } from '../../db/connect.js';
import { isCitusCoordinator } from '../../db/distribution.js';
import { claimKeys, reusedKey } from '../../idempotency/claims.js';
import { settleRecords } from '../../idempotency/repository.js';
import { addDailyCounts, type IntakeTally } from '../daily-counts-repository.js';
import { readBatchLookup, readLookupsAcross, type BatchLookup } from '../lookup-repository.js';
import { runPlan, setBased, SetBasedWriteFailed } from './executor-steps.js';
import { lookedUpFirst, planRuns, runInputOf, runsAcrossWorkspaces, runsOf, type Run, type RunInput } from './plan.js';
import type { PreparedLead } from './prepare.js';
import { RUN_AGAIN, type GroupOutcome, type RowResult, type Settled, type WriteRequest, type WriteResult } from './write-request.js';

// The executors: runs a write group (src/leads/intake/write-groups.ts) as the
// planner (plan.ts) plans it. Every request's Idempotency-Key claimed, its rows' lookup read,
// the plan's statements and rows alone run (executor-steps.ts), each request's answer shaped
// and stored, the day's counts added, one commit. Each request gets exactly the answer it would
// have got alone. A group whose every row creates a person whose company and tags exist needs no
// transaction: after its lookup, one statement writes and counts them, committing alone.
// On a Citus coordinator (`citus`), the Citus executor: the same plan, but no statement spans
// workspaces and every write names its workspace and is one task on the node holding it (the
// new leads as plain statements instead of one statement of CTEs, which the coordinator would
// plan as a dozen steps through itself), so a group of one workspace touches one node.

/**
 * Runs the requests and returns each one's outcome, in their order. A group whose lookup may be
 * read first (lookedUpFirst) and whose plan commits alone is written by one statement; otherwise
 * it runs as one transaction (with that lookup, when it was read). A set-based statement that
 * failed as a whole reruns the transaction one row at a time, so only the row at fault fails.
 * Throws when the transaction itself fails (the database went away, or a failure no row's
 * savepoint contains): the caller decides whose failure it is. `commits`: called when every
 * statement but the COMMIT is done, or once the one statement has committed; it may be called
 * again when the transaction runs again. `acrossWorkspaces`: statements may span the runs of
 * several workspaces (plain PostgreSQL only); a Citus coordinator gets the Citus executor.
 */
export async function runGroupTransaction(
  db: Db,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  log: Logger,
  { commits = () => {}, acrossWorkspaces: mayShareStatements = false }: { commits?: () => void; acrossWorkspaces?: boolean } = {},
): Promise<GroupOutcome[]> {
  const citus = await isCitusCoordinator(db);
  const acrossWorkspaces = mayShareStatements && !citus;
  const runs = lookedUpFirst(requests, acrossWorkspaces, citus);
  const first = runs ? await commitAlone(db, requests, runs, log, citus) : {};
  if ('settled' in first) {
    commits();
    return first.settled;
  }
  const run = (rowByRow: boolean) =>
    inTransactionRetried(db, async (trx) => {
      const outcomes = await runGroup(trx, requests, log, { rowByRow, acrossWorkspaces, citus, lookedUp: rowByRow ? undefined : first.lookedUp });
      commits();
      return outcomes;
    });
  try {
    return await run(false);
  } catch (error) {
    if (!(error instanceof SetBasedWriteFailed)) throw error;
    log.warn({ err: error.cause, requests: requests.length }, 'set-based write of leads failed; running the group again one row at a time');
    return run(true);
  }
}

/**
 * A group whose lookup is read before any transaction: each request's outcome when the plan
 * commits alone and its statement wrote every row; otherwise what the transaction starts from:
 * the lookups by workspace, or none when the lookup or the write failed (the transaction reads
 * afresh). An outage is thrown: no transaction would do better.
 */
async function commitAlone(
  db: Executor,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  runs: readonly Run[],
  log: Logger,
  citus: boolean,
): Promise<{ settled: Settled[] } | { lookedUp?: Map<number, BatchLookup | undefined> }> {
  const inputs = runs.map(runInputOf(requests));
  const lookups = await lookUp(db, inputs).catch(unlessUnavailable);
  if (!lookups) return {};
  const plan = planRuns(inputs, lookups, { severalWorkspaces: true, mayCommitAlone: true });
  if (!plan.commitsAlone) return { lookedUp: new Map(inputs.map((input, position) => [input.workspaceId, lookups[position]])) };
  const results: RowResult[][] = inputs.map(() => []);
  try {
    await runPlan({ db, citus, runs: inputs, plan, results, log });
  } catch (error) {
    unlessUnavailable(error);
    const cause = error instanceof SetBasedWriteFailed ? error.cause : error;
    log.debug({ err: cause, requests: requests.length }, 'the write of new people failed as a whole (written since the lookup?); running the group as a transaction');
    return {};
  }
  const settled: Settled[] = new Array(requests.length);
  runs.forEach((run, position) => answerRun(requests, run, results[position]!, settled));
  return { settled };
}

const unlessUnavailable = (error: unknown): null => {
  if (isUnavailable(error)) throw error;
  return null;
};

/** What a run's lookup looks for: every row's tags, match keys and company references, each once. */
function batchReferences({ workspaceId, rows }: RunInput) {
  const leads: PreparedLead[] = rows.map((row) => row.lead);
  const companies = leads.flatMap((lead) => (lead.company ? [lead.company] : []));
  const keys = leads.flatMap((lead) => lead.identities);
  return {
    workspaceId,
    tagIds: [...new Set(leads.flatMap((lead) => lead.tagIds))],
    tagNames: [...new Set(leads.flatMap((lead) => lead.tagNames.map((name) => name.toLowerCase())))],
    kinds: keys.map((key) => key.kind),
    values: keys.map((key) => key.value),
    domains: [...new Set(companies.flatMap((company) => (company.domain !== null ? [company.domain] : [])))],
    companyIds: [...new Set(companies.flatMap((company) => (company.id !== null ? [company.id] : [])))],
  };
}

/** The runs' lookups in one statement: a single run's names its workspace; those of several (plain PostgreSQL only) each look in their own. */
async function lookUp(db: Executor, runs: readonly RunInput[]): Promise<Array<BatchLookup | undefined>> {
  if (runs.length === 1) return runs[0]!.dryRun ? [undefined] : [await readBatchLookup(db, batchReferences(runs[0]!))];
  const references = runs.map(batchReferences);
  /** Every run's references of one kind, and beside each the workspace it is looked for in. */
  const all = <Value>(of: (run: (typeof references)[number]) => readonly Value[]) => references.flatMap(of);
  const workspacesOf = (of: (run: (typeof references)[number]) => readonly unknown[]) => references.flatMap((run) => of(run).map(() => run.workspaceId));
  const found = await readLookupsAcross(db, {
    keyWorkspaces: workspacesOf((run) => run.kinds),
    kinds: all((run) => run.kinds),
    values: all((run) => run.values),
    tagIdWorkspaces: workspacesOf((run) => run.tagIds),
    tagIds: all((run) => run.tagIds),
    tagNameWorkspaces: workspacesOf((run) => run.tagNames),
    tagNames: all((run) => run.tagNames),
    domainWorkspaces: workspacesOf((run) => run.domains),
    domains: all((run) => run.domains),
    companyIdWorkspaces: workspacesOf((run) => run.companyIds),
    companyIds: all((run) => run.companyIds),
  });
  const lookups = new Map<number, BatchLookup>(runs.map(({ workspaceId }) => [workspaceId, { tags: [], matches: [], companies: [] }]));
  for (const { workspace_id, tag } of found.tags) lookups.get(Number(workspace_id))!.tags.push(tag);
  for (const { workspace_id, ...match } of found.matches) lookups.get(Number(workspace_id))!.matches.push(match);
  for (const { workspace_id, ...company } of found.companies) lookups.get(Number(workspace_id))!.companies.push(company);
  return runs.map(({ workspaceId }) => lookups.get(workspaceId));
}

/** Shapes each member's share of the run's row results into its answer (or its refusal). */
function answerRun(requests: ReadonlyArray<WriteRequest<unknown>>, { members }: Run, results: readonly RowResult[], settled: Array<Settled | undefined>): void {
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

/** Adds the rows' outcomes to the workspace's tally: a row without an outcome failed (refused or unexpectedly). */
function tallyRows(tallies: Map<number, IntakeTally>, workspaceId: number, results: readonly RowResult[]): void {
  let tally = tallies.get(workspaceId);
  if (!tally) tallies.set(workspaceId, (tally = { created: 0, updated: 0, skipped: 0, failed: 0 }));
  for (const result of results) tally['outcome' in result ? result.outcome.status : 'failed'] += 1;
}

const keyOf = (request: WriteRequest<unknown>) => request.idempotency && `${request.idempotency.apiKeyId}\u0000${request.idempotency.key}`;

/**
 * The group's transaction. `rowByRow` runs every row alone; `acrossWorkspaces` lets runs of
 * several workspaces share statements; `citus`: the Citus executor; `lookedUp`: each workspace's lookup, when it was read
 * before the transaction (lookedUpFirst: then every request runs, one run per workspace).
 */
async function runGroup(
  trx: Executor,
  requests: ReadonlyArray<WriteRequest<unknown>>,
  log: Logger,
  {
    rowByRow,
    acrossWorkspaces,
    citus,
    lookedUp,
  }: { rowByRow: boolean; acrossWorkspaces: boolean; citus: boolean; lookedUp: ReadonlyMap<number, BatchLookup | undefined> | undefined },
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
  /** Plans the runs with their lookup and runs the plan; each member of each run gets its answer. */
  const execute = async (runs: readonly Run[], severalWorkspaces: boolean) => {
    const inputs = runs.map(runInputOf(requests));
    const lookups = rowByRow ? [] : lookedUp ? inputs.map(({ workspaceId }) => lookedUp.get(workspaceId)) : await setBased(lookUp(trx, inputs));
    const plan = planRuns(inputs, lookups, { severalWorkspaces, mayCommitAlone: false });
    const results: RowResult[][] = inputs.map(() => []);
    await runPlan({ db: trx, citus, runs: inputs, plan, results, log });
    runs.forEach((run, position) => {
      if (!run.first.dryRun) tallyRows(tallies, run.first.workspaceId, results[position]!);
      answerRun(requests, run, results[position]!, settled);
    });
  };
  const runs = runsOf(
    requests,
    requests.flatMap((_, index) => (settled[index] || followers.has(index) ? [] : [index])),
  );
  const shared = !rowByRow && acrossWorkspaces ? runsAcrossWorkspaces(runs) : [];
  if (shared.length > 0) await execute(shared, true);
  for (const run of runs) if (!shared.includes(run)) await execute([run], false);

  // Only answers below 400 are kept; a refused request's claim goes (errors are never stored).
  const ran = keyed.filter((_, position) => 'runs' in claims[position]!);
  const answered = ran.flatMap(({ index, key }) => {
    const outcome = settled[index]!;
    return 'result' in outcome ? [{ ...key, status: outcome.result.status, body: outcome.result.body }] : [];
  });
  const failed = ran.filter(({ index }) => 'error' in settled[index]!).map(({ key }) => key);
  await settleRecords(trx, answered, failed);
  await addDailyCounts(trx, tallies, { routed: citus });

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
