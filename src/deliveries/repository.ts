import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { DeliveryBranch, DeliveryRow, DeliverySender, NewDelivery } from '../db/schema.js';
import { jsonParameter } from '../db/sql.js';
import { CREDENTIAL_NAME_PATTERN, deliveryHeaderSecrets, mapCredentialHeaders } from '../secrets/credential-headers.js';

/** The stored row with its credential headers opened (sealed when composed, src/deliveries/compose.ts). */
export const openDelivery = <Row extends DeliveryRow>(row: Row): Row => ({ ...row, headers: mapCredentialHeaders(row.headers, deliveryHeaderSecrets(row).open) });

/** Whose deliveries: a connector's (a workflow's to that connector included), or a workflow's (to its Custom URL or to a connector). */
export type DeliveryOwner = { connectorId: number } | { workflowId: number };

/**
 * Finishes every pending delivery of the owner, retries and claimed ones included, as `Failed`
 * with `error` and without another attempt; their credential headers (sealed when composed) are
 * dropped from the row, as they will never be sent. A worker holding one of them finds it
 * finished when it records its attempt, and records nothing. Returns how many were finished.
 */
export async function cancelPendingDeliveries(db: Executor, owner: DeliveryOwner, error: string): Promise<number> {
  const ownerColumn = 'connectorId' in owner ? sql.ref('connector_id') : sql.ref('workflow_id');
  const ownerId = 'connectorId' in owner ? owner.connectorId : owner.workflowId;
  const { rows } = await sql<{ id: number }>`
    UPDATE deliveries SET branch = 'Failed', error = ${error}, finished_at = now(), locked_by = NULL, locked_until = NULL,
      -- coalesce inside the subquery: Citus refuses a COALESCE around one in an UPDATE over several shards.
      headers = (
        SELECT coalesce(jsonb_agg(h.header ORDER BY h.position), '[]'::jsonb) FROM jsonb_array_elements(headers) WITH ORDINALITY AS h(header, position)
        WHERE NOT (h.header->>'name' ~* ${CREDENTIAL_NAME_PATTERN})
      )
    WHERE branch = 'pending' AND ${ownerColumn} = ${ownerId}
    RETURNING id
  `.execute(db);
  return rows.length;
}

const INSERT_CHUNK = 500;

export async function insertDeliveries(db: Executor, rows: readonly NewDelivery[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const inserted = await db
      .insertInto('deliveries')
      .values(rows.slice(start, start + INSERT_CHUNK))
      .onConflict((conflict) => conflict.columns(['outbox_id', 'workflow_id', 'workspace_id']).where('outbox_id', 'is not', null).where('workflow_id', 'is not', null).doNothing())
      .returning('id')
      .execute();
    ids.push(...inserted.map((row) => row.id));
  }
  return ids;
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
  await db.updateTable('deliveries').set({ locked_by: null, locked_until: null }).where('locked_by', '=', workerId).where('branch', '=', 'pending').execute();
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
  /** Of those attempts, answers 429 that postponed it without counting against max_attempts. */
  rate_limited: number;
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
  let query = db
    .selectFrom('deliveries')
    .select([
      'id',
      'event',
      'sender',
      'trigger',
      'lead_id',
      'connector_id',
      'workflow_id',
      'message_id',
      'method',
      'url',
      'series',
      'attempts',
      'rate_limited',
      'branch',
      'status_code',
      'error',
      'reply',
      'next_attempt_at',
      'created_at',
      'finished_at',
    ])
    .where('workspace_id', '=', workspaceId);
  if (filter.leadId !== undefined) query = query.where('lead_id', '=', filter.leadId);
  if (filter.branch !== undefined) query = query.where('branch', '=', filter.branch);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  const rows = filter.limit === undefined ? await query.orderBy('id').execute() : (await query.orderBy('id', 'desc').limit(filter.limit).execute()).reverse();
  return rows.map((row) => ({ ...row, next_attempt_at: row.branch === 'pending' ? row.next_attempt_at : null }));
}

export async function findDelivery(db: Executor, id: number, workspaceId: number): Promise<DeliveryRow | undefined> {
  const row = await db.selectFrom('deliveries').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  return row && openDelivery(row);
}

/** Seals the credential headers of every delivery row holding any again with the current key, for their row (after a key change, or v1 values); returns how many rows. */
export async function resealDeliveries(db: Executor): Promise<number> {
  const rows = await db
    .selectFrom('deliveries')
    .select(['id', 'workspace_id', 'message_id', 'headers'])
    .where(sql<boolean>`headers::text ~ '"v[12]:'`)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const secrets = deliveryHeaderSecrets(row);
    await db
      .updateTable('deliveries')
      .set({ headers: jsonParameter(mapCredentialHeaders(mapCredentialHeaders(row.headers, secrets.open), secrets.seal)) })
      .where('workspace_id', '=', row.workspace_id)
      .where('id', '=', row.id)
      .execute();
  }
  return rows.length;
}

/** Every recorded attempt of a delivery, every series, in the order they were made. */
export async function listDeliveryAttempts(db: Executor, workspaceId: number, deliveryId: number) {
  return db
    .selectFrom('delivery_attempts')
    .select(['series', 'attempt', 'created_at', 'duration_ms', 'status_code', 'error', 'reply', 'trace_id'])
    .where('workspace_id', '=', workspaceId)
    .where('delivery_id', '=', deliveryId)
    .orderBy('series')
    .orderBy('attempt')
    .execute();
}

const SENDERS: readonly DeliverySender[] = ['custom_url', 'saved_connector', 'connector_push', 'test', 'erasure_notice'];

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
