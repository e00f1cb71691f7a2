import type { Transaction } from 'kysely';
import type { Db } from './connect.js';
import type { Database } from './schema.js';

// PostgreSQL aborts one of two transactions that wait on each other (a deadlock) or that a
// serializable snapshot cannot order; neither wrote anything, so the work is safe to run again.
const RETRYABLE_CONFLICTS = new Set(['40P01', '40001']);

/** True when `error` is a deadlock or serialization failure: rerun the work that failed. */
export function isRetryableConflict(error: unknown): boolean {
  return RETRYABLE_CONFLICTS.has((error as { code?: string } | null)?.code ?? '');
}

const TRANSACTION_ATTEMPTS = 3;

/** Runs `work` in a transaction, again (up to three times in all) when PostgreSQL aborted it as a deadlock victim. */
export async function inTransactionRetried<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction().execute(work);
    } catch (error) {
      if (!isRetryableConflict(error) || attempt >= TRANSACTION_ATTEMPTS) throw error;
    }
  }
}
