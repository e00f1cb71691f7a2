import type { Logger } from 'pino';
import { isUnavailable } from '../../db/availability.js';
import type { FairSlots } from '../../db/fair-slots.js';
import { callerContext, inSpan, linksTo } from '../../tracing/spans.js';
import { RUN_AGAIN, type GroupOutcome, type RunGroup, type Settled, type WriteRequest, type WriteResult } from './write-request.js';

// Group commit for lead writes. Concurrent write requests of this process run together as
// one group: one transaction (the RunGroup it is given: src/leads/intake/executor.ts), their rows planned and
// written as one set, one commit. A request that arrives when no group is working starts one at
// once (no timer, no added latency at low load). Requests arriving while a group works wait:
// the next group forms from them while that group commits (its statements done, its COMMIT on
// the way), or beside it once GROUP_FILL of them wait, so under load a group holds what
// arrived during the one before instead of the first caller after a commit starting a group
// of its own. A group is taken from each API key's waiting requests in turn, whatever their
// workspaces. A request's failure is its own: a group whose transaction fails for any reason
// but the database itself runs again in halves, down to the request at fault.

/** A group holds at most this many requests: enough to share a commit among every connection
 * a busy process serves, few enough that one group's transaction stays short. */
export const MAX_GROUP_REQUESTS = 64;
/**
 * Groups that may work at once (send their statements before their commit). Two: rows that
 * run one at a time (updates) and runs of many workspaces cost round trips per request, and
 * two groups keep two connections busy with them.
 */
export const WORKING_GROUPS = 2;
/**
 * The same on a Citus coordinator, where a group holds one workspace's calls: calls of many
 * workspaces make groups of one call each, each a round trip or two to its node that no other
 * group shares, so more of them work at once (each group in a transaction holds a connection:
 * enough of the default pool stays for the requests that run alone).
 */
export const WORKING_GROUPS_OF_ONE_WORKSPACE = 6;
/**
 * Requests that must wait before a group starts beside one still working. Fewer wait for its
 * commit: a group of the one or two calls that came in a moment after the working group
 * started would pay a commit of its own for them (the first caller after a commit used to).
 */
export const GROUP_FILL = 8;
/** Groups that may hold a connection at once: those working and one committing (`oneWorkspace`: as WriteGroupsOptions'). */
export const runningGroups = (oneWorkspace: boolean) => workingGroups(oneWorkspace) + 1;
const workingGroups = (oneWorkspace: boolean) => (oneWorkspace ? WORKING_GROUPS_OF_ONE_WORKSPACE : WORKING_GROUPS);

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
  /**
   * Each group holds requests of one workspace (a Citus coordinator: its transaction then
   * touches one node, and commits there), and WORKING_GROUPS_OF_ONE_WORKSPACE work at once;
   * otherwise of any, WORKING_GROUPS at once.
   */
  oneWorkspace?: boolean;
}

interface Member {
  request: WriteRequest<unknown>;
  settle(settled: Settled): void;
  /** The caller's trace context (tracing on): the group's span links to it. */
  traced: ReturnType<typeof callerContext>;
}

export class WriteGroups {
  /** Waiting requests per API key, in arrival order; the keys in the order of their turns. */
  private readonly queues = new Map<number, Member[]>();
  private queued = 0;
  /** Groups holding a connection (drain loops), and those of them not yet committing. */
  private running = 0;
  private working = 0;
  /** Groups that may work at once, and that may hold a connection at once. */
  readonly workingGroups: number;
  private readonly runningLimit: number;

  constructor(
    private readonly runGroup: RunGroup,
    private readonly log: Logger,
    private readonly options: WriteGroupsOptions,
  ) {
    this.workingGroups = workingGroups(options.oneWorkspace ?? false);
    this.runningLimit = runningGroups(options.oneWorkspace ?? false);
  }

  /** Requests waiting for the next group. */
  get waiting(): number {
    return this.queued;
  }

  /** Requests that run alone waiting for a slot. */
  get waitingForSlots(): number {
    return this.options.slots.waiting;
  }

  /** Runs the request in the next group of concurrent requests (at once when no group is working). */
  submit<Body>(request: WriteRequest<Body>): Promise<WriteResult<Body>> {
    if (this.queued >= this.options.queueLimit) return Promise.reject(new WriteQueueFull());
    return answered(request, (member) => {
      this.enqueue([member]);
      this.startGroup();
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
   * workspace are planned and written as one set. `oneWorkspace`: only the keys of the first
   * key's workspace are served; the others keep their place in the turn.
   */
  private nextGroup(): Member[] {
    const group: Member[] = [];
    const passed: Array<[number, Member[]]> = [];
    const workspace = this.options.oneWorkspace ? this.queues.values().next().value![0]!.request.workspaceId : null;
    while (group.length < MAX_GROUP_REQUESTS && this.queues.size > 0) {
      const [key, queue] = this.queues.entries().next().value!;
      this.queues.delete(key);
      if (workspace !== null && queue[0]!.request.workspaceId !== workspace) {
        passed.push([key, queue]);
        continue;
      }
      group.push(queue.shift()!);
      if (queue.length > 0) this.queues.set(key, queue);
    }
    if (passed.length > 0) {
      const served = [...this.queues];
      this.queues.clear();
      for (const [key, queue] of [...passed, ...served]) this.queues.set(key, queue);
    }
    this.queued -= group.length;
    const workspaces = [...new Set(group.map((member) => member.request.workspaceId))];
    return group.sort((a, b) => workspaces.indexOf(a.request.workspaceId) - workspaces.indexOf(b.request.workspaceId));
  }

  /** Starts the next group when requests wait and none works, or enough wait to fill one beside those working. */
  private startGroup(): void {
    if (this.running >= this.runningLimit || this.working >= this.workingGroups) return;
    if (this.queued > 0 && (this.working === 0 || this.queued >= GROUP_FILL)) void this.drain();
  }

  /**
   * Runs groups one after another while requests wait and no other group works (or enough wait
   * to fill one beside it); a group that reaches its commit lets the next one start beside it
   * (startGroup), which then carries on.
   */
  private async drain(): Promise<void> {
    this.running += 1;
    try {
      while (this.queued > 0 && (this.working === 0 || (this.working < this.workingGroups && this.queued >= GROUP_FILL))) {
        this.working += 1;
        let committing = false;
        const commits = () => {
          if (committing) return;
          committing = true;
          this.working -= 1;
          this.startGroup();
        };
        try {
          await this.run(this.nextGroup(), false, commits);
        } finally {
          commits();
        }
      }
    } finally {
      this.running -= 1;
      this.startGroup();
    }
  }

  /**
   * One group, committed together. When its transaction fails, the database going away fails
   * every request (503 for each). Any other failure was caused by some request: each half of
   * the group runs again on its own, recursively, so the request at fault fails alone and
   * every other one gets the answer it would have got alone (the first half commits first,
   * as it arrived first). `commits`: told when the group's statements are done and its commit
   * is on the way.
   */
  private async run(group: Member[], isolating = false, commits?: () => void): Promise<void> {
    if (!isolating) this.options.groupRan(group.length);
    let outcomes: GroupOutcome[];
    try {
      // One span for the group's transaction, in the trace of the request that came first, linked to every request it carries.
      const span = { parent: group[0]!.traced, links: linksTo(group.map((member) => member.traced)), attributes: { 'lead_intake.write_group.requests': group.length } };
      outcomes = await inSpan('leads write group', span, async () =>
        this.runGroup(
          group.map((member) => member.request),
          commits ?? (() => {}),
        ),
      );
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
    this.enqueue(
      group.filter((_, index) => outcomes[index] === RUN_AGAIN),
      true,
    );
    group.forEach((member, index) => {
      const outcome = outcomes[index]!;
      if (outcome !== RUN_AGAIN) member.settle(outcome);
    });
  }
}

/** The request's answer, once `start` has put it, as a member, where it runs. */
function answered<Body>(request: WriteRequest<Body>, start: (member: Member) => void): Promise<WriteResult<Body>> {
  return new Promise((resolve, reject) =>
    start({
      request: request as WriteRequest<unknown>,
      traced: callerContext(),
      settle: (settled) => ('result' in settled ? resolve(settled.result as WriteResult<Body>) : reject(settled.error)),
    }),
  );
}
