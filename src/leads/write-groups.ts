import type { Logger } from 'pino';
import { inTransactionRetried } from '../db/conflicts.js';
import type { Db, Executor } from '../db/connect.js';
import { claimKeys, reusedKey, type KeyedRequest } from '../idempotency/claims.js';
import { settleRecords } from '../idempotency/repository.js';
import { runIntake, SetBasedWriteFailed, type IntakeRow, type RowResult } from './intake-engine.js';
import type { IntakeOptions } from './row-intake.js';

// Group commit for lead writes. Concurrent write requests of this process run together as
// one group: one transaction, their rows through the intake engine as one set, one commit.
// A request that arrives while a group may start (fewer than RUNNING_GROUPS run) starts one
// at once (no timer, no added latency at low load); requests arriving while they all run wait
// and form the next group. Each request still
// gets exactly the answer it would have got alone: its own idempotency claim, its rows'
// results shaped by its own operation, its own refusal.

/** A group holds at most this many requests: enough to share a commit among every connection
 * a busy process serves, few enough that one group's transaction stays short. */
export const MAX_GROUP_REQUESTS = 64;
/**
 * Groups that may run at once. With two, one group's round trips overlap the next's: rows
 * that run one at a time (updates) keep two connections busy instead of one, while new people
 * still arrive in large groups.
 */
export const RUNNING_GROUPS = 2;

/** One write request, as the engine takes it. */
export interface WriteRequest<Body> {
  workspaceId: number;
  /** The request's Idempotency-Key (scoped to its API key) and the fingerprint of its body, when it sent one. */
  idempotency: KeyedRequest | null;
  rows: IntakeRow[];
  options: IntakeOptions;
  dryRun: boolean;
  /** Shapes the rows' results into the operation's answer; throws the operation's refusal. */
  answer(results: RowResult[]): { status: number; body: Body };
}

export interface WriteResult<Body> {
  status: number;
  body: Body;
  /** The stored answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

type Settled = { result: WriteResult<unknown> } | { error: unknown };
/** A request that shared its Idempotency-Key with an earlier one of its group that did not succeed: it runs in the next group. */
const RUN_AGAIN = Symbol('run again');
interface Member { request: WriteRequest<unknown>; settle(settled: Settled): void }

export class WriteGroups {
  private readonly queue: Member[] = [];
  private running = 0;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly groupRan: (requests: number) => void,
  ) {}

  /** Requests waiting for the next group. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Runs the request in the next group of concurrent requests (at once when a group may start). */
  submit<Body>(request: WriteRequest<Body>): Promise<WriteResult<Body>> {
    return answered(request, (member) => {
      this.queue.push(member);
      if (this.running < RUNNING_GROUPS) void this.drain();
    });
  }

  /** Runs the request in a transaction of its own: a dry run never shares one with real writes. */
  alone<Body>(request: WriteRequest<Body>): Promise<WriteResult<Body>> {
    return answered(request, (member) => void this.run([member]));
  }

  private async drain(): Promise<void> {
    this.running += 1;
    try {
      while (this.queue.length > 0) await this.run(this.queue.splice(0, MAX_GROUP_REQUESTS));
    } finally {
      this.running -= 1;
    }
  }

  /** One group: committed together, or failed together when the transaction fails (a database outage: 503 for each). */
  private async run(group: Member[]): Promise<void> {
    this.groupRan(group.length);
    const requests = group.map((member) => member.request);
    try {
      let settled: Array<Settled | typeof RUN_AGAIN>;
      try {
        settled = await inTransactionRetried(this.db, (trx) => runGroup(trx, requests, this.log, true));
      } catch (error) {
        if (!(error instanceof SetBasedWriteFailed)) throw error;
        this.log.warn({ err: error.cause, requests: group.length }, 'set-based write of new leads failed; running the group again one row at a time');
        settled = await inTransactionRetried(this.db, (trx) => runGroup(trx, requests, this.log, false));
      }
      const again = group.filter((_, index) => settled[index] === RUN_AGAIN);
      group.forEach((member, index) => { if (settled[index] !== RUN_AGAIN) member.settle(settled[index] as Settled); });
      this.queue.unshift(...again);
    } catch (error) {
      for (const member of group) member.settle({ error });
    }
  }
}

/** The request's answer, once `start` has put it, as a member, where it runs. */
function answered<Body>(request: WriteRequest<Body>, start: (member: Member) => void): Promise<WriteResult<Body>> {
  return new Promise((resolve, reject) => start({
    request: request as WriteRequest<unknown>,
    settle: (settled) => ('result' in settled ? resolve(settled.result as WriteResult<Body>) : reject(settled.error)),
  }));
}

/** Same workspace and switches: rows of consecutive such requests run through the engine as one set. */
const sameRun = (a: WriteRequest<unknown>, b: WriteRequest<unknown>) =>
  a.workspaceId === b.workspaceId && a.dryRun === b.dryRun && a.options.onDuplicate === b.options.onDuplicate
  && a.options.createMissingTags === b.options.createMissingTags && a.options.enrich === b.options.enrich;

const keyOf = (request: WriteRequest<unknown>) => request.idempotency && `${request.idempotency.apiKeyId}\u0000${request.idempotency.key}`;

async function runGroup(
  trx: Executor, requests: ReadonlyArray<WriteRequest<unknown>>, log: Logger, setBased: boolean,
): Promise<Array<Settled | typeof RUN_AGAIN>> {
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
  const claims = await claimKeys(trx, keyed.map(({ key }) => key));
  keyed.forEach(({ index }, position) => {
    const claim = claims[position]!;
    if ('replay' in claim) settled[index] = { result: { ...claim.replay, replayed: true } };
    if ('refused' in claim) settled[index] = { error: claim.refused };
  });

  const running = requests.flatMap((_, index) => (settled[index] || followers.has(index) ? [] : [index]));
  for (let start = 0; start < running.length;) {
    let end = start + 1;
    while (end < running.length && sameRun(requests[running[start]!]!, requests[running[end]!]!)) end += 1;
    const members = running.slice(start, end);
    const first = requests[members[0]!]!;
    const results = await runIntake(trx, first.workspaceId, members.flatMap((index) => requests[index]!.rows), first.options, first.dryRun, log, setBased);
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
    start = end;
  }

  // Only answers below 400 are kept; a refused request's claim goes (errors are never stored).
  const ran = keyed.filter((_, position) => 'runs' in claims[position]!);
  const answered = ran.flatMap(({ index, key }) => {
    const outcome = settled[index]!;
    return 'result' in outcome ? [{ ...key, status: outcome.result.status, body: outcome.result.body }] : [];
  });
  const failed = ran.filter(({ index }) => 'error' in settled[index]!).map(({ key }) => key);
  await settleRecords(trx, answered, failed);

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
