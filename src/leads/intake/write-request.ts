import type { IntakeSwitches, LeadWriteMeta } from '../../../generated/api.js';
import type { KeyedRequest } from '../../idempotency/claims.js';
import type { LeadRecord } from '../columns.js';
import type { PreparedLead } from './prepare.js';
import type { DuplicateRejected, RowRejected } from './rejections.js';

// What the write groups take and give back: one write request (its rows and its switches), what
// became of each of its rows, and its answer (src/leads/intake/write-groups.ts, executor.ts).

/**
 * The call-level switches of an intake, in one place: what a request asks for, the defaults the
 * document gives. A new switch is added here and nowhere else.
 */
export interface IntakeOptions {
  onDuplicate: NonNullable<IntakeSwitches['on_duplicate']>;
  createMissingTags: boolean;
  enrich: boolean;
}

/** A request's switches with the document's defaults filled in. */
export function switchesOf(request: IntakeSwitches): { options: IntakeOptions; dryRun: boolean } {
  return {
    options: {
      onDuplicate: request.on_duplicate ?? 'update',
      createMissingTags: request.create_missing_tags ?? true,
      enrich: request.enrich ?? true,
    },
    dryRun: request.dry_run ?? false,
  };
}

/** Whether two requests ask for the same switches (every one of them): their rows may then run as one set. */
export const sameOptions = (a: IntakeOptions, b: IntakeOptions): boolean => (Object.keys(a) as Array<keyof IntakeOptions>).every((name) => a[name] === b[name]);

/** A row to take in: the prepared lead, and whether its caller answers with the lead as stored. */
export interface IntakeRow {
  lead: PreparedLead;
  /** POST /leads answers with the lead: the row's result then carries its record. */
  wantsRecord: boolean;
}

/** What matched, as every lead write answer reports it (meta, a batch row, the 409 body). */
export type MatchReport = Pick<LeadWriteMeta, 'matched_on' | 'match_kind' | 'conflicts'>;

export interface RowOutcome {
  status: 'created' | 'updated' | 'skipped';
  leadId: number;
  /** What matched the lead updated or skipped; nothing for a created one. */
  match: MatchReport;
  warnings: string[];
  /** Rows this call created besides the lead (a dry run reports them with a null id). */
  createdCompanyId: number | null;
  createdTagIds: number[];
  /** The lead as stored (read back by the statement that wrote it), when the caller needs it. */
  record?: LeadRecord;
}

/** What became of one row: an outcome, a refusal of the row alone, or an unexpected failure of the row alone. */
export type RowResult = { outcome: RowOutcome } | { rejected: RowRejected | DuplicateRejected } | { unexpected: unknown };

/** One write request, as the executor takes it. */
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
