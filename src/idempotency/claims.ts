import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import { inSavepoint } from '../db/savepoint.js';
import { claimRecords, findRecord, type IdempotencyRecordKey } from './repository.js';

// Idempotency-Keys inside the write's own transaction: a request's record is claimed before it
// runs and its answer stored in that same transaction, so writes and record commit or vanish
// together; a concurrent request with the same key waits on the claim, then replays.

/** The key was used with another body, or its first request is still running: 409 on both POST routes. */
export class IdempotencyConflict extends Error {
  constructor(
    readonly code: 'idempotency_key_reuse' | 'idempotency_key_in_progress',
    message: string,
  ) {
    super(message);
  }
}

export interface KeyedRequest extends IdempotencyRecordKey {
  fingerprint: string;
}

/** What a claim decided: the request runs, its stored answer is replayed, or it is refused. */
export type Claim = { runs: true } | { replay: { status: number; body: unknown } } | { refused: IdempotencyConflict };

/** How long a request waits for a concurrent request holding its key before it answers in progress. */
const IN_PROGRESS_WAIT = '10s';
/** With several keys claimed at once, how long the set waits before each key is claimed alone. */
const SET_CLAIM_WAIT = '100ms';

const isLockTimeout = (error: unknown) => (error as { code?: string }).code === '55P03';
const inProgress = () => new IdempotencyConflict('idempotency_key_in_progress', 'A request with this Idempotency-Key is still being processed. Retry shortly to get its answer.');
/** The refusal of a key sent again with another body. */
export const reusedKey = () =>
  new IdempotencyConflict('idempotency_key_reuse', 'This Idempotency-Key was already used with a different request body. Use a new key for a different request.');

/**
 * Claims the keys of these requests (distinct keys) in one statement. A key still held by a
 * request running elsewhere makes the set wait briefly, then each key is claimed alone, so
 * only the request sharing that key waits out the in-progress window, once.
 */
export async function claimKeys(trx: Executor, requests: readonly KeyedRequest[]): Promise<Claim[]> {
  if (requests.length === 0) return [];
  const attempt = async (claims: readonly KeyedRequest[], wait: string): Promise<IdempotencyRecordKey[] | null> => {
    await sql`SET LOCAL lock_timeout = ${sql.lit(wait)}`.execute(trx);
    try {
      return await inSavepoint(trx, 'idempotency_claim', true, () => claimRecords(trx, claims));
    } catch (error) {
      if (isLockTimeout(error)) return null;
      throw error;
    }
  };

  // A lone request goes straight to its own claim: the set's brief try would only repeat it.
  const together = requests.length > 1 ? await attempt(requests, SET_CLAIM_WAIT) : null;
  const decided: Array<Claim | 'read'> = [];
  for (const request of requests) {
    const claimed = together ?? (await attempt([request], IN_PROGRESS_WAIT));
    if (claimed === null) decided.push({ refused: inProgress() });
    else decided.push(claimed.some((row) => row.apiKeyId === request.apiKeyId && row.key === request.key) ? { runs: true } : 'read');
  }
  await sql`SET LOCAL lock_timeout = DEFAULT`.execute(trx);

  // Not claimed: a live record of a finished request exists (errors are never stored).
  const claims: Claim[] = [];
  for (const [index, claim] of decided.entries()) {
    if (claim !== 'read') {
      claims.push(claim);
      continue;
    }
    const stored = await findRecord(trx, requests[index]!);
    claims.push(stored.fingerprint !== requests[index]!.fingerprint ? { refused: reusedKey() } : { replay: { status: stored.status_code!, body: stored.response_body } });
  }
  return claims;
}
