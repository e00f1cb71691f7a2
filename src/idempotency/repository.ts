import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

// The stored answers of Idempotency-Keys, one row per (API key, Idempotency-Key).

/** How long a stored answer is replayed; older records are claimed afresh and purged. */
const REPLAY_WINDOW = sql`interval '24 hours'`;

export interface IdempotencyRecordKey {
  apiKeyId: number;
  key: string;
}

/**
 * Claims the key for this request: inserts the record, or takes over one older than the
 * replay window. Undefined when a live record exists (then read it). Waits on a concurrent
 * claim of the same key until that transaction ends or the caller's lock_timeout.
 */
export function claimRecord(db: Executor, record: IdempotencyRecordKey, fingerprint: string) {
  return db.insertInto('idempotency_records')
    .values({ api_key_id: record.apiKeyId, key: record.key, fingerprint })
    .onConflict((oc) => oc.columns(['api_key_id', 'key']).doUpdateSet({
      fingerprint, status_code: null, response_body: null, created_at: sql`now()`,
    }).where(sql<boolean>`idempotency_records.created_at < now() - ${REPLAY_WINDOW}`))
    .returning('key')
    .executeTakeFirst();
}

export function findRecord(db: Executor, record: IdempotencyRecordKey) {
  return db.selectFrom('idempotency_records')
    .where('api_key_id', '=', record.apiKeyId).where('key', '=', record.key)
    .select(['fingerprint', 'status_code', 'response_body'])
    .executeTakeFirstOrThrow();
}

export async function storeAnswer(db: Executor, record: IdempotencyRecordKey, status: number, body: unknown): Promise<void> {
  await db.updateTable('idempotency_records')
    .set({ status_code: status, response_body: JSON.stringify(body) })
    .where('api_key_id', '=', record.apiKeyId).where('key', '=', record.key)
    .execute();
}

export async function deleteRecord(db: Executor, record: IdempotencyRecordKey): Promise<void> {
  await db.deleteFrom('idempotency_records').where('api_key_id', '=', record.apiKeyId).where('key', '=', record.key).execute();
}

/** Deletes the records past the replay window. */
export async function purgeExpiredRecords(db: Executor): Promise<void> {
  await db.deleteFrom('idempotency_records').where(sql<boolean>`created_at < now() - ${REPLAY_WINDOW}`).execute();
}
