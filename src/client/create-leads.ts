import { BATCH_MAX } from '../../generated/limits.js';
import type { ApiError, BatchMeta, BatchRowResult, CreateBatchBody, CreateBatchOperation, LeadRow, PostOptions, PostResult, Switches } from './types.js';

export interface CreateLeadsOptions extends Switches {
  /** Rows per request, 1 to 100 (default 100). */
  batchSize?: number;
  /**
   * Makes the whole import repeatable: batch n (from 0) is sent with the Idempotency-Key
   * `<idempotencyKey>:<n>`, so running the same rows again with the same key within 24
   * hours replays the batches that already ran instead of running them twice. Without it
   * every batch gets its own random key (still kept across the client's retries).
   */
  idempotencyKey?: string;
}

/** A row whose batch was refused as a whole (nothing in it ran) or never sent. */
export interface UnprocessedRow {
  index: number;
  status: 'not_processed';
  lead_id: null;
  /** Why the batch holding this row did not run. */
  reason: ApiError<CreateBatchOperation>;
  /** This row's own validation messages by field (`leads.<i>.<field>` keys of a 422); empty when the row itself was valid. */
  errors: Record<string, string[]>;
}

export type CreateLeadsRow = BatchRowResult | UnprocessedRow;

export interface CreateLeadsResult {
  /** `true` when every row ran; a row that ran may still be `failed` (see `meta.failed`). */
  ok: boolean;
  /** One entry per row given, in the caller's order: `rows[i].index === i`. */
  rows: CreateLeadsRow[];
  meta: BatchMeta & { not_processed: number };
  /** The error that stopped the import (no later batch was sent), or null. A 422 batch does not stop it. */
  stoppedBy: ApiError<CreateBatchOperation> | null;
}

type SendBatch = (body: CreateBatchBody, options?: PostOptions) => Promise<PostResult<CreateBatchOperation>>;

const ROW_ERROR_KEY = /^leads\.(\d+)\.(.+)$/;

function unprocessed(index: number, reason: ApiError<CreateBatchOperation>, errors: Record<string, string[]> = {}): UnprocessedRow {
  return { index, status: 'not_processed', lead_id: null, reason, errors };
}

/** A 422's `leads.<i>.<field>` keys, by the row's position in the batch. */
function errorsByRow(reason: ApiError<CreateBatchOperation>): Map<number, Record<string, string[]>> {
  const byRow = new Map<number, Record<string, string[]>>();
  if (reason.error !== 'validation_failed') return byRow;
  for (const [key, messages] of Object.entries(reason.errors)) {
    const match = ROW_ERROR_KEY.exec(key);
    if (!match) continue;
    const row = byRow.get(Number(match[1])) ?? {};
    row[match[2]!] = messages;
    byRow.set(Number(match[1]), row);
  }
  return byRow;
}

function count(rows: readonly CreateLeadsRow[], dryRun: boolean): CreateLeadsResult['meta'] {
  const meta = { created: 0, updated: 0, skipped: 0, failed: 0, not_processed: 0, total: rows.length, dry_run: dryRun };
  for (const row of rows) meta[row.status] += 1;
  return meta;
}

/**
 * Sends the rows as consecutive batches (one request each, one at a time, so rows keep
 * their order: a person twice ends `created` then `updated`) with the same switches.
 * A batch refused with 422 leaves its rows `not_processed` (each with its own messages) and
 * the import goes on; any other refusal (after the client's own retries) stops it, and the
 * rest is `not_processed` with that reason.
 */
export async function createLeadsInBatches(send: SendBatch, rows: readonly LeadRow[], options: CreateLeadsOptions = {}): Promise<CreateLeadsResult> {
  const { batchSize = BATCH_MAX, idempotencyKey, ...switches } = options;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > BATCH_MAX) throw new RangeError(`batchSize must be an integer from 1 to ${BATCH_MAX}`);
  const results: CreateLeadsRow[] = new Array(rows.length);
  let stoppedBy: ApiError<CreateBatchOperation> | null = null;

  for (let start = 0, batch = 0; start < rows.length; start += batchSize, batch++) {
    const end = Math.min(start + batchSize, rows.length);
    if (stoppedBy) {
      for (let index = start; index < end; index++) results[index] = unprocessed(index, stoppedBy);
      continue;
    }
    const answer = await send({ ...switches, leads: rows.slice(start, end) }, idempotencyKey === undefined ? {} : { idempotencyKey: `${idempotencyKey}:${batch}` });
    if (answer.ok) {
      let placed = 0;
      for (const row of answer.data.data) {
        const index = start + row.index;
        if (row.index < 0 || index >= end || results[index] !== undefined) continue;
        results[index] = { ...row, index };
        placed++;
      }
      if (placed !== end - start) {
        stoppedBy = { error: 'unexpected_response', message: `the batch answer does not hold one result per row (${placed} of ${end - start})`, body: answer.data };
        for (let index = start; index < end; index++) results[index] ??= unprocessed(index, stoppedBy);
      }
      continue;
    }
    const ownErrors = errorsByRow(answer.error);
    for (let index = start; index < end; index++) results[index] = unprocessed(index, answer.error, ownErrors.get(index - start));
    if (answer.error.error !== 'validation_failed') stoppedBy = answer.error;
  }

  const meta = count(results, switches.dry_run ?? false);
  return { ok: meta.not_processed === 0, rows: results, meta, stoppedBy };
}
