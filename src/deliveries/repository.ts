import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { DeliveryBranch, DeliveryRow, DeliverySender, NewDelivery } from '../db/schema.js';
import { mapCredentialHeaders } from '../secrets/credential-headers.js';
import { openSecret, sealSecret } from '../secrets/keyring.js';

/** The stored row with its credential headers opened (sealed when composed, src/deliveries/compose.ts). */
const openDelivery = (row: DeliveryRow): DeliveryRow => ({ ...row, headers: mapCredentialHeaders(row.headers, openSecret) });

const INSERT_CHUNK = 500;

export async function insertDeliveries(db: Executor, rows: readonly NewDelivery[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const inserted = await db.insertInto('deliveries').values(rows.slice(start, start + INSERT_CHUNK))
      .onConflict((conflict) => conflict.columns(['outbox_id', 'workflow_id']).where('outbox_id', 'is not', null).where('workflow_id', 'is not', null).doNothing())
      .returning('id').execute();
    ids.push(...inserted.map((row) => row.id));
  }
  return ids;
}

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

const PURGE_BATCH = 500;

/**
 * Deletes finished deliveries created more than `retentionDays` ago, their attempts with them
 * (ON DELETE CASCADE), in batches of a few hundred so no statement holds many locks for long.
 * Returns how many were deleted.
 */
export async function purgeOldDeliveries(db: Executor, retentionDays: number): Promise<number> {
  let purged = 0;
  for (;;) {
    const result = await sql<{ id: number }>`
      DELETE FROM deliveries WHERE id IN (
        SELECT id FROM deliveries
        WHERE created_at < now() - make_interval(days => ${retentionDays}) AND branch <> 'pending'
        ORDER BY id LIMIT ${PURGE_BATCH}
      ) RETURNING id
    `.execute(db);
    purged += result.rows.length;
    if (result.rows.length < PURGE_BATCH) return purged;
  }
}

/** Gives back claims this worker holds (shutdown): another worker may take them at once. */
export async function releaseDeliveryClaims(db: Executor, workerId: string): Promise<void> {
  await db.updateTable('deliveries').set({ locked_by: null, locked_until: null })
    .where('locked_by', '=', workerId).where('branch', '=', 'pending').execute();
}

export interface DeliveryListItem {
  id: number;
  event: string;
  sender: string;
  trigger: string;
  lead_id: number | null;
  connector_id: number | null;
  workflow_id: number | null;
  message_id: string;
  method: string;
  url: string;
  series: number;
  attempts: number;
  branch: DeliveryBranch;
  status_code: number | null;
  error: string | null;
  reply: string | null;
  next_attempt_at: string | null;
  created_at: string;
  finished_at: string | null;
}

export interface DeliveryFilter {
  leadId?: number;
  branch?: DeliveryBranch;
  /** Created at or after this instant. */
  since?: string;
  /** Only the newest this many (still listed oldest first). */
  limit?: number;
}

/**
 * A workspace's deliveries, oldest first (by id, which grows with creation): the order the
 * command always had, stable across calls; a limit keeps the newest ones.
 */
export async function listDeliveries(db: Executor, workspaceId: number, filter: DeliveryFilter): Promise<DeliveryListItem[]> {
  let query = db.selectFrom('deliveries')
    .select(['id', 'event', 'sender', 'trigger', 'lead_id', 'connector_id', 'workflow_id', 'message_id', 'method', 'url', 'series', 'attempts', 'branch',
      'status_code', 'error', 'reply', 'next_attempt_at', 'created_at', 'finished_at'])
    .where('workspace_id', '=', workspaceId);
  if (filter.leadId !== undefined) query = query.where('lead_id', '=', filter.leadId);
  if (filter.branch !== undefined) query = query.where('branch', '=', filter.branch);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  const rows = filter.limit === undefined
    ? await query.orderBy('id').execute()
    : (await query.orderBy('id', 'desc').limit(filter.limit).execute()).reverse();
  return rows.map((row) => ({ ...row, next_attempt_at: row.branch === 'pending' ? row.next_attempt_at : null }));
}

export async function findDelivery(db: Executor, id: number): Promise<DeliveryRow | undefined> {
  const row = await db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  return row && openDelivery(row);
}

/** Seals the credential headers of every delivery row holding any again with the current key (after a key change); returns how many rows. */
export async function resealDeliveries(db: Executor): Promise<number> {
  const rows = await db.selectFrom('deliveries').select(['id', 'headers'])
    .where(sql<boolean>`headers::text LIKE '%"v1:%'`).orderBy('id').execute();
  for (const row of rows) {
    const headers = mapCredentialHeaders(mapCredentialHeaders(row.headers, openSecret), sealSecret);
    await db.updateTable('deliveries').set({ headers: JSON.stringify(headers) }).where('id', '=', row.id).execute();
  }
  return rows.length;
}

/** Every recorded attempt of a delivery, every series, in the order they were made. */
export async function listDeliveryAttempts(db: Executor, deliveryId: number) {
  return db.selectFrom('delivery_attempts').select(['series', 'attempt', 'created_at', 'duration_ms', 'status_code', 'error', 'reply'])
    .where('delivery_id', '=', deliveryId).orderBy('series').orderBy('attempt').execute();
}

/** The columns of a delivery starting a new series: pending, due now, no attempts yet; the request and its message id stay. */
const NEW_SERIES = {
  series: sql<number>`series + 1`, attempts: 0, branch: 'pending', status_code: null, error: null, reply: null,
  next_attempt_at: sql<string>`now()`, locked_by: null, locked_until: null, finished_at: null,
} as const;

/** What a delivery starting a new series prints. */
const NEW_SERIES_RETURNED = ['id', 'message_id', 'series', 'attempts', 'branch', 'next_attempt_at'] as const;

/**
 * Starts a new series of attempts of a finished delivery that was sent at least once: pending,
 * due now, no attempts yet in the series; the request and its message id stay as they were.
 * Undefined when the delivery is not such a delivery (missing, pending, never sent).
 */
export async function startNewSeries(db: Executor, id: number) {
  return db.updateTable('deliveries').set(NEW_SERIES)
    .where('id', '=', id).where('branch', '!=', 'pending').where('attempts', '>', 0)
    .returning(NEW_SERIES_RETURNED)
    .executeTakeFirst();
}

/** An endpoint whose deliveries are recovered: a connector's, or a workflow's. */
export type RecoveryEndpoint = { connectorId: number } | { workflowId: number };

export interface RecoveryWindow {
  /** Ended at or after this instant. */
  since: string;
  /** Ended at or before this instant; undefined: now. */
  until?: string;
}

/**
 * Recovery after an outage: every delivery of the endpoint (Send test deliveries aside) that
 * ended `Failed` in the window, was sent at least once and was never recovered starts a new
 * series (as startNewSeries) and is marked recovered, in one statement. A concurrent recovery
 * waits on the rows this one updates and then finds them recovered: each is sent again once.
 * `skipped`: the endpoint's other deliveries that ended Failed in the window (already
 * recovered, or never sent).
 */
export async function recoverFailedDeliveries(db: Executor, endpoint: RecoveryEndpoint, window: RecoveryWindow) {
  const failed = db.selectFrom('deliveries').select('id')
    .where((eb) => ('connectorId' in endpoint ? eb('connector_id', '=', endpoint.connectorId) : eb('workflow_id', '=', endpoint.workflowId)))
    .where('branch', '=', 'Failed').where('event', '!=', 'test')
    .where('finished_at', '>=', window.since).where('finished_at', '<=', window.until ?? sql<string>`now()`);
  const rows = await db.with('failed', () => failed)
    .with('recovered', (qb) => qb.updateTable('deliveries').set({ ...NEW_SERIES, recovered_at: sql<string>`now()` })
      .where('id', 'in', (eb) => eb.selectFrom('failed').select('id'))
      .where('branch', '=', 'Failed').where('attempts', '>', 0).where('recovered_at', 'is', null)
      .returning(NEW_SERIES_RETURNED))
    .selectFrom('failed').leftJoin('recovered', 'recovered.id', 'failed.id')
    .select(['failed.id', 'recovered.message_id'])
    .orderBy('failed.id').execute();
  const recovered = rows.filter((row) => row.message_id !== null);
  return { recovered: recovered.length, skipped: rows.length - recovered.length, delivery_ids: recovered.map((row) => row.id) };
}

const SENDERS: readonly DeliverySender[] = ['custom_url', 'saved_connector', 'connector_push', 'test'];

/**
 * Per sender (every sender, 0 when none): pending deliveries due now (those being attempted
 * included) and how long the longest-waiting one has been due, in seconds. Reads through the
 * partial index deliveries_due_idx.
 */
export async function dueDeliveriesBySender(db: Executor): Promise<Array<{ sender: DeliverySender; due: number; oldestDueSeconds: number }>> {
  const { rows } = await sql<{ sender: DeliverySender; due: number; oldest_due_seconds: number }>`
    SELECT s.sender, count(d.id)::int AS due, coalesce(extract(epoch FROM now() - min(d.next_attempt_at)), 0)::float8 AS oldest_due_seconds
    FROM unnest(${sql.val(SENDERS)}::text[]) AS s(sender)
    LEFT JOIN deliveries AS d ON d.sender = s.sender AND d.branch = 'pending' AND d.next_attempt_at <= now()
    GROUP BY s.sender ORDER BY s.sender
  `.execute(db);
  return rows.map((row) => ({ sender: row.sender, due: row.due, oldestDueSeconds: row.oldest_due_seconds }));
}
