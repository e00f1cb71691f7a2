import { sql, type Transaction } from 'kysely';
import type { Db } from '../db/connect.js';
import type { Database } from '../db/schema.js';
import { claimRecord, deleteRecord, findRecord, storeAnswer, type IdempotencyRecordKey } from './repository.js';

const IN_PROGRESS_WAIT = '10s';

export interface WriteResult<Body> {
  status: number;
  body: Body;
  replayed: boolean;
}

export interface IdempotencyScope {
  apiKeyId: number;
  /** The Idempotency-Key header, when sent. */
  key: string | undefined;
  fingerprint: string;
}

/** The key was used with another body, or its first request is still running: 409 on both POST routes. */
export class IdempotencyConflict extends Error {
  constructor(readonly code: 'idempotency_key_reuse' | 'idempotency_key_in_progress', message: string) {
    super(message);
  }
}

const RETRYABLE_CODES = new Set(['40P01', '40001']);
const isRetryable = (error: unknown) => RETRYABLE_CODES.has((error as { code?: string }).code ?? '');

/**
 * Runs a write in one transaction. With an Idempotency-Key the stored answer is claimed
 * first in that same transaction, so the writes and their record commit or vanish together;
 * a concurrent request with the same key waits on the claim and then replays, or gives up
 * with IdempotencyConflict (in progress). Only answers below 400 are kept (errors roll back).
 */
export async function runIdempotent<Body>(
  db: Db,
  scope: IdempotencyScope,
  work: (trx: Transaction<Database>) => Promise<{ status: number; body: Body }>,
): Promise<WriteResult<Body>> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction().execute((trx) => runOnce(trx, scope, work));
    } catch (error) {
      // Deadlocks between concurrent writers of the same rows: the whole transaction is safe to rerun.
      if (!isRetryable(error) || attempt >= 3) throw error;
    }
  }
}

async function runOnce<Body>(
  trx: Transaction<Database>,
  scope: IdempotencyScope,
  work: (trx: Transaction<Database>) => Promise<{ status: number; body: Body }>,
): Promise<WriteResult<Body>> {
  if (scope.key === undefined) return { ...(await work(trx)), replayed: false };
  const record: IdempotencyRecordKey = { apiKeyId: scope.apiKeyId, key: scope.key };

  await sql`SET LOCAL lock_timeout = ${sql.lit(IN_PROGRESS_WAIT)}`.execute(trx);
  let claimed: boolean;
  try {
    claimed = (await claimRecord(trx, record, scope.fingerprint)) !== undefined;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') {
      throw new IdempotencyConflict('idempotency_key_in_progress', 'A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.');
    }
    throw error;
  }
  await sql`SET LOCAL lock_timeout = DEFAULT`.execute(trx);

  if (!claimed) {
    const stored = await findRecord(trx, record);
    if (stored.fingerprint !== scope.fingerprint) {
      throw new IdempotencyConflict('idempotency_key_reuse', 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.');
    }
    return { status: stored.status_code!, body: stored.response_body as Body, replayed: true };
  }

  const result = await work(trx);
  if (result.status < 400) await storeAnswer(trx, record, result.status, result.body);
  else await deleteRecord(trx, record);
  return { ...result, replayed: false };
}
