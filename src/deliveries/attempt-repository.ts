import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { DeliveryBranch, DeliveryRow } from '../db/schema.js';
import { openDelivery } from './repository.js';

// The worker's cycle on a delivery: claim it under a lease, then record the attempt made.

/**
 * Claims due deliveries for this worker under a lease and commits the claim at once, so
 * no transaction stays open across HTTP. SKIP LOCKED lets several workers claim side by
 * side; a claim whose lease ran out (its worker died) is claimable again.
 */
export async function claimDueDeliveries(db: Executor, workerId: string, limit: number, leaseMs: number, onlyId?: number): Promise<DeliveryRow[]> {
  const result = await sql<DeliveryRow>`
    UPDATE deliveries AS d
    SET locked_by = ${workerId}, locked_until = now() + make_interval(secs => ${leaseMs / 1000})
    FROM (
      SELECT id FROM deliveries
      WHERE branch = 'pending' AND next_attempt_at <= now()
        AND (locked_until IS NULL OR locked_until < now())
        ${onlyId === undefined ? sql`` : sql`AND id = ${onlyId}`}
      ORDER BY next_attempt_at, id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE d.id = due.id
    RETURNING d.*
  `.execute(db);
  return result.rows.map(openDelivery);
}

export interface AttemptOutcome {
  deliveryId: number;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  reply: string | null;
  durationMs: number;
  /** pending: retry at nextAttemptAt. */
  branch: DeliveryBranch;
  nextAttemptAt: Date | null;
  /** Connector push: the receiver's record id, stored on the lead. */
  crmRecord: { leadId: number; recordId: string } | null;
}

/**
 * Records attempts and their consequences in one statement, each only while this worker
 * still holds its claim: a worker whose lease ran out cannot overwrite the one that took
 * over. Returns the ids recorded.
 */
export async function recordAttempts(db: Executor, workerId: string, outcomes: readonly AttemptOutcome[]): Promise<number[]> {
  if (outcomes.length === 0) return [];
  const input = JSON.stringify(outcomes.map((outcome) => ({
    delivery_id: outcome.deliveryId,
    attempt: outcome.attempt,
    status_code: outcome.statusCode,
    error: outcome.error,
    reply: outcome.reply,
    duration_ms: outcome.durationMs,
    branch: outcome.branch,
    next_attempt_at: outcome.nextAttemptAt?.toISOString() ?? null,
    crm_lead_id: outcome.crmRecord?.leadId ?? null,
    crm_record_id: outcome.crmRecord?.recordId ?? null,
  })));
  const result = await sql<{ id: number }>`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS r(delivery_id bigint, attempt int, status_code int, error text, reply text,
        duration_ms int, branch text, next_attempt_at timestamptz, crm_lead_id bigint, crm_record_id text)
    ), updated AS (
      UPDATE deliveries AS d SET
        attempts = i.attempt,
        branch = i.branch,
        status_code = i.status_code,
        error = i.error,
        reply = i.reply,
        next_attempt_at = coalesce(i.next_attempt_at, d.next_attempt_at),
        locked_by = NULL,
        locked_until = NULL,
        finished_at = CASE WHEN i.branch = 'pending' THEN NULL ELSE now() END
      FROM input AS i
      WHERE d.id = i.delivery_id AND d.locked_by = ${workerId} AND d.branch = 'pending'
      RETURNING d.id, d.series
    ), attempt AS (
      INSERT INTO delivery_attempts (delivery_id, series, attempt, status_code, error, reply, duration_ms)
      SELECT i.delivery_id, u.series, i.attempt, i.status_code, i.error, i.reply, i.duration_ms FROM input AS i JOIN updated AS u ON u.id = i.delivery_id
      ON CONFLICT DO NOTHING
    ), synced AS (
      UPDATE leads AS l SET crm_record_id = i.crm_record_id
      FROM input AS i JOIN updated AS u ON u.id = i.delivery_id
      WHERE l.id = i.crm_lead_id AND i.crm_record_id IS NOT NULL
    )
    SELECT id FROM updated
  `.execute(db);
  return result.rows.map((row) => row.id);
}
