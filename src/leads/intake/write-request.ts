import type { KeyedRequest } from '../../idempotency/claims.js';
import type { IntakeRow, RowResult } from './intake-engine.js';
import type { IntakeOptions } from './options.js';

// What the write groups take and give back: one write request as the intake engine takes it,
// and its answer (src/leads/intake/write-groups.ts, group-transaction.ts).

/** One write request, as the engine takes it. */
export interface WriteRequest<Body> {
  workspaceId: number;
  /** The API key that sent it: the unit of fairness between callers. */
  apiKeyId: number;
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

/** How a request of a group ended: its answer, or the error it is answered with. */
export type Settled = { result: WriteResult<unknown> } | { error: unknown };

/** A request that shared its Idempotency-Key with an earlier one of its group that did not succeed: it runs in the next group. */
export const RUN_AGAIN = Symbol('run again');
export type GroupOutcome = Settled | typeof RUN_AGAIN;

/**
 * Runs one group's requests together and returns each one's outcome, in their order; throws
 * when the group as a whole failed. `commits`: called when the group's statements are done
 * and its commit is on the way (it may be called again when the group's work runs again).
 */
export type RunGroup = (requests: ReadonlyArray<WriteRequest<unknown>>, commits: () => void) => Promise<GroupOutcome[]>;
