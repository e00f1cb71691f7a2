import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import { jsonParameter } from '../db/sql.js';

// The stored answers of Idempotency-Keys, one row per (API key, Idempotency-Key).

/** How long a stored answer is replayed; older records are claimed afresh and purged. */
const REPLAY_WINDOW = sql`interval '24 hours'`;

export interface IdempotencyRecordKey {
  /** The API key's workspace: every statement names it (the table is distributed by it on Citus). */
  workspaceId: number;
  apiKeyId: number;
  key: string;
}

/**
 * Claims the keys for these requests, in one statement: inserts each record, or takes over
 * one older than the replay window. Returns the records claimed; for the others a live record
 * exists (then read it). Waits on a concurrent claim of any of the keys until that transaction
 * ends or the caller's lock_timeout. The keys must be distinct. The time comes from the SELECT and
 * the window is taken in UTC: Citus refuses now() and timestamptz arithmetic (STABLE) in ON CONFLICT.
 */
export async function claimRecords(db: Executor, claims: ReadonlyArray<IdempotencyRecordKey & { fingerprint: string }>): Promise<IdempotencyRecordKey[]> {
  if (claims.length === 0) return [];
  const { rows } = await sql<{ workspaceId: number; apiKeyId: number; key: string }>`
    INSERT INTO idempotency_records (workspace_id, api_key_id, key, fingerprint, created_at)
    SELECT *, now() FROM unnest(${claims.map((claim) => claim.workspaceId)}::bigint[], ${claims.map((claim) => claim.apiKeyId)}::bigint[], ${claims.map((claim) => claim.key)}::text[],
      ${claims.map((claim) => claim.fingerprint)}::text[])
    ON CONFLICT (api_key_id, key, workspace_id) DO UPDATE SET fingerprint = excluded.fingerprint, status_code = NULL, response_body = NULL, created_at = excluded.created_at
    WHERE idempotency_records.created_at AT TIME ZONE 'UTC' < (excluded.created_at AT TIME ZONE 'UTC') - ${REPLAY_WINDOW}
    RETURNING workspace_id AS "workspaceId", api_key_id AS "apiKeyId", key`.execute(db);
  return rows;
}

export function findRecord(db: Executor, record: IdempotencyRecordKey) {
  return db
    .selectFrom('idempotency_records')
    .where('workspace_id', '=', record.workspaceId)
    .where('api_key_id', '=', record.apiKeyId)
    .where('key', '=', record.key)
    .select(['fingerprint', 'status_code', 'response_body'])
    .executeTakeFirstOrThrow();
}

/** Stores the answers of claimed records (status below 400) and deletes the records of requests that failed, in one statement. */
export async function settleRecords(
  db: Executor,
  answers: ReadonlyArray<IdempotencyRecordKey & { status: number; body: unknown }>,
  failed: readonly IdempotencyRecordKey[],
): Promise<void> {
  if (answers.length === 0 && failed.length === 0) return;
  await sql`
    WITH stored AS (
      UPDATE idempotency_records AS r SET status_code = a.status, response_body = a.body::jsonb
      FROM unnest(${answers.map((answer) => answer.workspaceId)}::bigint[], ${answers.map((answer) => answer.apiKeyId)}::bigint[], ${answers.map((answer) => answer.key)}::text[],
        ${answers.map((answer) => answer.status)}::int[], ${answers.map((answer) => jsonParameter(answer.body))}::text[]) AS a(workspace_id, api_key_id, key, status, body)
      WHERE r.workspace_id = a.workspace_id AND r.api_key_id = a.api_key_id AND r.key = a.key
    )
    DELETE FROM idempotency_records AS r
    USING unnest(${failed.map((record) => record.workspaceId)}::bigint[], ${failed.map((record) => record.apiKeyId)}::bigint[], ${failed.map((record) => record.key)}::text[]) AS f(workspace_id, api_key_id, key)
    WHERE r.workspace_id = f.workspace_id AND r.api_key_id = f.api_key_id AND r.key = f.key`.execute(db);
}

/** Deletes the records past the replay window. */
export async function purgeExpiredRecords(db: Executor): Promise<void> {
  await db
    .deleteFrom('idempotency_records')
    .where(sql<boolean>`created_at < now() - ${REPLAY_WINDOW}`)
    .execute();
}
