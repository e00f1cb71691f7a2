import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { FairSlots } from '../../src/db/fair-slots.js';
import { GROUP_FILL, MAX_GROUP_REQUESTS, WORKING_GROUPS, WriteGroups, WriteQueueFull } from '../../src/leads/intake/write-groups.js';
import { RUN_AGAIN, type GroupOutcome, type IntakeOptions, type RunGroup, type WriteRequest, type WriteResult } from '../../src/leads/intake/write-request.js';

// The write groups' own rules, with no database: a group runner the test drives stands in for
// the transaction (test/leads/write-groups.test.ts runs them against PostgreSQL's locks).

interface Named extends WriteRequest<unknown> {
  name: string;
}

interface GroupCall {
  names: string[];
  /** Tells the groups this one's commit is on the way (unless `committing` is false), then gives each request its outcome. */
  settle(outcomes: (request: Named) => GroupOutcome, committing?: boolean): void;
  fail(error: unknown): void;
}

/** A runner whose groups stay working until the test commits and settles them. */
function heldRunner(): { run: RunGroup; calls: GroupCall[] } {
  const calls: GroupCall[] = [];
  const run: RunGroup = (requests, commits) =>
    new Promise((resolve, reject) =>
      calls.push({
        names: requests.map((request) => (request as Named).name),
        settle: (outcome, committing = true) => {
          if (committing) commits();
          resolve(requests.map((request) => outcome(request as Named)));
        },
        fail: reject,
      }),
    );
  return { run, calls };
}

const answered = (request: Named): GroupOutcome => ({ result: { status: 201, body: request.name, replayed: false } });

let sequence = 0;
function request(name: string, apiKeyId = 1, workspaceId = 1): Named {
  sequence += 1;
  return { name, apiKeyId, workspaceId, idempotency: null, rows: [], options: {} as IntakeOptions, dryRun: false, answer: () => ({ status: 201, body: name }) };
}

function writeGroups(run: RunGroup, queueLimit = 1000): WriteGroups {
  return new WriteGroups(run, pino({ level: 'silent' }), { queueLimit, slots: new FairSlots<number>(2, 1), groupRan: () => {} });
}

const submitAll = (groups: WriteGroups, requests: Named[]) => requests.map((each) => groups.submit(each));
const bodies = (results: Array<WriteResult<unknown>>) => results.map((result) => result.body);
const names = (prefix: string, count: number, apiKeyId = 1, workspaceId = 1) => Array.from({ length: count }, (_, index) => request(`${prefix}${index}`, apiKeyId, workspaceId));
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('write groups (no database)', () => {
  it('start a group at once when none works, and form the next from the requests that arrived meanwhile, at its commit', async () => {
    const { run, calls } = heldRunner();
    const groups = writeGroups(run);
    const first = groups.submit(request('first'));
    expect(calls.map((call) => call.names)).toEqual([['first']]);
    const later = submitAll(groups, [request('second'), request('third')]);
    await turn();
    expect(calls).toHaveLength(1);
    expect(groups.waiting).toBe(2);

    calls[0]!.settle(answered);
    expect((await first).body).toBe('first');
    expect(calls[1]!.names).toEqual(['second', 'third']);
    calls[1]!.settle(answered);
    expect(bodies(await Promise.all(later))).toEqual(['second', 'third']);
  });

  it(`start a group beside a working one once ${GROUP_FILL} requests wait, and no more than ${WORKING_GROUPS} work at once`, async () => {
    const { run, calls } = heldRunner();
    const groups = writeGroups(run);
    void groups.submit(request('working'));
    submitAll(groups, names('early', GROUP_FILL - 1));
    await turn();
    expect(calls).toHaveLength(1);
    submitAll(groups, [request('filling')]);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.names).toHaveLength(GROUP_FILL);
    submitAll(groups, names('more', 2 * GROUP_FILL));
    await turn();
    expect(calls).toHaveLength(WORKING_GROUPS);
  });

  it(`take each API key's waiting requests in turn, up to ${MAX_GROUP_REQUESTS} a group, and order a group by workspace`, async () => {
    const { run, calls } = heldRunner();
    const groups = writeGroups(run);
    void groups.submit(request('working 1'));
    submitAll(groups, names('filler', GROUP_FILL));
    expect(calls).toHaveLength(WORKING_GROUPS);
    // One busy key's backlog, then another key's single request (in another workspace), then the busy key's next.
    submitAll(groups, [...names('busy', MAX_GROUP_REQUESTS + 10, 1, 10), request('other key', 2, 20), request('busy late', 1, 10)]);
    calls[0]!.settle(answered);
    const next = calls[2]!.names;
    expect(next).toHaveLength(MAX_GROUP_REQUESTS);
    expect(next).toContain('other key');
    expect(next).not.toContain('busy late');
    // Workspace 10's requests first (its key came first), in arrival order, then workspace 20's.
    expect(next).toEqual([...names('busy', MAX_GROUP_REQUESTS - 1).map((_, index) => `busy${index}`), 'other key']);
  });

  it('run a failed group again in halves, so only the request at fault fails and the others get their answers', async () => {
    const ran: string[][] = [];
    const failure = new Error('a constraint no rule expects');
    const run: RunGroup = async (requests, commits) => {
      const group = requests.map((each) => (each as Named).name);
      ran.push(group);
      if (group.includes('at fault')) throw failure;
      commits();
      return requests.map((each) => answered(each as Named));
    };
    const { run: gate, calls } = heldRunner();
    let gated = true;
    const groups = writeGroups((requests, commits) => (gated ? ((gated = false), gate(requests, commits)) : run(requests, commits)));
    void groups.submit(request('gate'));
    const outcomes = submitAll(groups, [request('a'), request('at fault'), request('c'), request('d')]).map((promise) =>
      promise.then(
        (result) => result.body,
        (error: unknown) => error,
      ),
    );
    calls[0]!.settle(answered);
    expect(await Promise.all(outcomes)).toEqual(['a', failure, 'c', 'd']);
    expect(ran).toEqual([['a', 'at fault', 'c', 'd'], ['a', 'at fault'], ['a'], ['at fault'], ['c', 'd']]);
  });

  it('fail every request of a group at once, without halves, when the database is unavailable', async () => {
    const ran: number[] = [];
    const unavailable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { run: gate, calls } = heldRunner();
    let gated = true;
    const groups = writeGroups((requests, commits) => {
      if (gated) return ((gated = false), gate(requests, commits));
      ran.push(requests.length);
      return Promise.reject(unavailable);
    });
    void groups.submit(request('gate'));
    const outcomes = submitAll(groups, names('r', 4)).map((promise) => promise.catch((error: unknown) => error));
    calls[0]!.settle(answered);
    expect(await Promise.all(outcomes)).toEqual([unavailable, unavailable, unavailable, unavailable]);
    expect(ran).toEqual([4]);
  });

  it('run a request its group sent back again in the next group, ahead of those that waited', async () => {
    const { run, calls } = heldRunner();
    const groups = writeGroups(run);
    void groups.submit(request('gate'));
    const [leader, follower] = submitAll(groups, [request('leader'), request('follower')]);
    calls[0]!.settle(answered);
    const waited = groups.submit(request('waited'));
    // Sent back before its group reports its commit, so the next group forms after it.
    calls[1]!.settle((each) => (each.name === 'follower' ? RUN_AGAIN : answered(each)), false);
    expect((await leader!).body).toBe('leader');
    await turn();
    expect(calls[2]!.names).toEqual(['follower', 'waited']);
    calls[2]!.settle(answered);
    expect(bodies(await Promise.all([follower!, waited]))).toEqual(['follower', 'waited']);
  });

  it('refuse a request beyond the queue limit with WriteQueueFull, and take one again once a place is free', async () => {
    const { run, calls } = heldRunner();
    const groups = writeGroups(run, 2);
    void groups.submit(request('working'));
    const queued = submitAll(groups, [request('one'), request('two')]);
    await expect(groups.submit(request('refused'))).rejects.toBeInstanceOf(WriteQueueFull);
    calls[0]!.settle(answered);
    expect(groups.waiting).toBe(0);
    void groups.submit(request('taken'));
    expect(groups.waiting).toBe(1);
    calls[1]!.settle(answered);
    expect(bodies(await Promise.all(queued))).toEqual(['one', 'two']);
  });
});
