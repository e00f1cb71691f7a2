import type { Logger } from 'pino';
import { isUnavailable } from '../db/availability.js';
import type { Db } from '../db/connect.js';
import type { FairSlots } from '../db/fair-slots.js';
import { RUN_AGAIN, runGroupTransaction, type GroupOutcome, type Settled, type WriteRequest, type WriteResult } from './group-transaction.js';

// Group commit for lead writes. Concurrent write requests of this process run together as
// one group: one transaction (src/leads/group-transaction.ts), their rows through the intake
// engine as one set, one commit. A request that arrives while a group may start (fewer than
// RUNNING_GROUPS run) starts one at once (no timer, no added latency at low load); requests
// arriving while they all run wait and form the next group, taken from each API key's
// waiting requests in turn. A request's failure is its own: a group whose transaction fails
// for any reason but the database itself runs again in halves, down to the request at fault.

/** A group holds at most this many requests: enough to share a commit among every connection
 * a busy process serves, few enough that one group's transaction stays short. */
export const MAX_GROUP_REQUESTS = 64;
/**
 * Groups that may run at once. With two, one group's round trips overlap the next's: rows
 * that run one at a time (updates) keep two connections busy instead of one, while new people
 * still arrive in large groups.
 */
export const RUNNING_GROUPS = 2;

/** Every place in this process's write queue is taken (WRITE_QUEUE_LIMIT): 503, retry shortly. */
export class WriteQueueFull extends Error {
  constructor() {
    super('the write queue of this process is full');
  }
}

export interface WriteGroupsOptions {
  /** The most requests waiting for a group; one more is refused at once (WriteQueueFull). */
  queueLimit: number;
  /** Requests that run alone (batches, dry runs) hold a connection each for their whole run: they share these slots fairly. */
  slots: FairSlots<number>;
  /** A group ran (metrics; its halves run again after a failure are not counted again). */
  groupRan(requests: number): void;
}

interface Member { request: WriteRequest<unknown>; settle(settled: Settled): void }

export class WriteGroups {
  /** Waiting requests per API key, in arrival order; the keys in the order of their turns. */
  private readonly queues = new Map<number, Member[]>();
  private queued = 0;
  private running = 0;

  constructor(private readonly db: Db, private readonly log: Logger, private readonly options: WriteGroupsOptions) {}

  /** Requests waiting for the next group. */
  get waiting(): number {
    return this.queued;
  }

  /** Requests that run alone waiting for a slot. */
  get waitingForSlots(): number {
    return this.options.slots.waiting;
  }

  /** Runs the request in the next group of concurrent requests (at once when a group may start). */
  submit<Body>(request: WriteRequest<Body>): Promise<WriteResult<Body>> {
    if (this.queued >= this.options.queueLimit) return Promise.reject(new WriteQueueFull());
    return answered(request, (member) => {
      this.enqueue([member]);
      if (this.running < RUNNING_GROUPS) void this.drain();
    });
  }

  /** Runs the request in a transaction of its own (a dry run never shares one with real writes), once its API key gets a slot. */
  alone<Body>(request: WriteRequest<Body>): Promise<WriteResult<Body>> {
    return answered(request, (member) => void this.options.slots.run(request.apiKeyId, () => this.run([member])));
  }

  /** Puts members in their keys' queues; `first`: ahead of what waits (they ran before and run again). */
  private enqueue(members: Member[], first = false): void {
    for (const member of first ? [...members].reverse() : members) {
      const key = member.request.apiKeyId;
      const queue = this.queues.get(key);
      if (!queue) this.queues.set(key, [member]);
      else if (first) queue.unshift(member);
      else queue.push(member);
      this.queued += 1;
    }
  }

  /**
   * The next group: one request of each waiting key in turn (a key served goes to the back of
   * the turn), so no key's backlog holds another key's request back by more than a group.
   * Then ordered by workspace, each key's requests still in arrival order, so rows of one
   * workspace run through the engine as one set.
   */
  private nextGroup(): Member[] {
    const group: Member[] = [];
    while (group.length < MAX_GROUP_REQUESTS && this.queues.size > 0) {
      const [key, queue] = this.queues.entries().next().value!;
      group.push(queue.shift()!);
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
    }
    this.queued -= group.length;
    const workspaces = [...new Set(group.map((member) => member.request.workspaceId))];
    return group.sort((a, b) => workspaces.indexOf(a.request.workspaceId) - workspaces.indexOf(b.request.workspaceId));
  }

  private async drain(): Promise<void> {
    this.running += 1;
    try {
      while (this.queued > 0) await this.run(this.nextGroup());
    } finally {
      this.running -= 1;
    }
  }

  /**
   * One group, committed together. When its transaction fails, the database going away fails
   * every request (503 for each). Any other failure was caused by some request: each half of
   * the group runs again on its own, recursively, so the request at fault fails alone and
   * every other one gets the answer it would have got alone (the first half commits first,
   * as it arrived first).
   */
  private async run(group: Member[], isolating = false): Promise<void> {
    if (!isolating) this.options.groupRan(group.length);
    let outcomes: GroupOutcome[];
    try {
      outcomes = await runGroupTransaction(this.db, group.map((member) => member.request), this.log);
    } catch (error) {
      if (group.length === 1 || isUnavailable(error)) {
        for (const member of group) member.settle({ error });
        return;
      }
      if (!isolating) this.log.warn({ err: error, requests: group.length }, 'a write group failed; running it again in halves to fail only the request at fault');
      const half = Math.ceil(group.length / 2);
      await this.run(group.slice(0, half), true);
      await this.run(group.slice(half), true);
      return;
    }
    this.enqueue(group.filter((_, index) => outcomes[index] === RUN_AGAIN), true);
    group.forEach((member, index) => {
      const outcome = outcomes[index]!;
      if (outcome !== RUN_AGAIN) member.settle(outcome);
    });
  }
}

/** The request's answer, once `start` has put it, as a member, where it runs. */
function answered<Body>(request: WriteRequest<Body>, start: (member: Member) => void): Promise<WriteResult<Body>> {
  return new Promise((resolve, reject) => start({
    request: request as WriteRequest<unknown>,
    settle: (settled) => ('result' in settled ? resolve(settled.result as WriteResult<Body>) : reject(settled.error)),
  }));
}
