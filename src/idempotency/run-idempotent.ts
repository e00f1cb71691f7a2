import { sql, type Transaction } from 'kysely';
import type { Db } from '../db/connect.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../http/errors.js';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
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

/** 400 for an empty or over-long key: checked only after the body validated (spec check order). */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_LENGTH)) {
    throw new ApiError(400, {
      error: 'invalid_idempotency_key',
      message: `The Idempotency-Key header must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters long.`,
    });
  }
}

const RETRYABLE_CODES = new Set(['40P01', '40001']);
const isRetryable = (error: unknown) => RETRYABLE_CODES.has((error as { code?: string }).code ?? '');

/**
 * Runs a write in one transaction. With an Idempotency-Key the stored answer is claimed
 * first in that same transaction, so the writes and their record commit or vanish together;
 * a concurrent request with the same key waits on the claim and then replays, or gives up
 * with 409 idempotency_key_in_progress. Only answers below 400 are kept (errors roll back).
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

  await sql`SET LOCAL lock_timeout = ${sql.lit(IN_PROGRESS_WAIT)}`.execute(trx);
  let claimed: boolean;
  try {
    const claim = await trx.insertInto('idempotency_records')
      .values({ api_key_id: scope.apiKeyId, key: scope.key, fingerprint: scope.fingerprint })
      .onConflict((oc) => oc.columns(['api_key_id', 'key']).doUpdateSet({
        fingerprint: scope.fingerprint, status_code: null, response_body: null, created_at: sql`now()`,
      }).where(sql<boolean>`idempotency_records.created_at < now() - interval '24 hours'`))
      .returning('key')
      .executeTakeFirst();
    claimed = claim !== undefined;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') {
      throw new ApiError(409, { error: 'idempotency_key_in_progress', message: 'A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.' });
    }
    throw error;
  }
  await sql`SET LOCAL lock_timeout = DEFAULT`.execute(trx);

  if (!claimed) {
    const stored = await trx.selectFrom('idempotency_records')
      .where('api_key_id', '=', scope.apiKeyId).where('key', '=', scope.key)
      .select(['fingerprint', 'status_code', 'response_body'])
      .executeTakeFirstOrThrow();
    if (stored.fingerprint !== scope.fingerprint) {
      throw new ApiError(409, { error: 'idempotency_key_reuse', message: 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.' });
    }
    return { status: stored.status_code!, body: stored.response_body as Body, replayed: true };
  }

  const result = await work(trx);
  if (result.status < 400) {
    await trx.updateTable('idempotency_records')
      .set({ status_code: result.status, response_body: JSON.stringify(result.body) })
      .where('api_key_id', '=', scope.apiKeyId).where('key', '=', scope.key)
      .execute();
  } else {
    await trx.deleteFrom('idempotency_records').where('api_key_id', '=', scope.apiKeyId).where('key', '=', scope.key).execute();
  }
  return { ...result, replayed: false };
}
