import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';
import type { DeliveryOwner } from './repository.js';

// A finished delivery sent again under its webhook-id as a new series of attempts: one by
// `deliveries replay`, every Failed one of an endpoint's window by `deliveries recover`.

/** The columns of a delivery starting a new series: pending, due now, no attempts yet; the request and its message id stay. */
const NEW_SERIES = {
  series: sql<number>`series + 1`,
  attempts: 0,
  rate_limited: 0,
  branch: 'pending',
  status_code: null,
  error: null,
  reply: null,
  next_attempt_at: sql<string>`now()`,
  locked_by: null,
  locked_until: null,
  finished_at: null,
} as const;

/** What a delivery starting a new series prints. */
const NEW_SERIES_RETURNED = ['id', 'message_id', 'series', 'attempts', 'branch', 'next_attempt_at'] as const;

/**
 * Starts a new series of attempts of a finished delivery that was sent at least once: pending,
 * due now, no attempts yet in the series; the request and its message id stay as they were.
 * Undefined when the delivery is not such a delivery (missing, pending, never sent).
 */
export async function startNewSeries(db: Executor, id: number, workspaceId: number) {
  return db
    .updateTable('deliveries')
    .set(NEW_SERIES)
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .where('branch', '!=', 'pending')
    .where('attempts', '>', 0)
    .returning([...NEW_SERIES_RETURNED, 'workspace_id'])
    .executeTakeFirst();
}

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
export async function recoverFailedDeliveries(db: Executor, endpoint: DeliveryOwner, window: RecoveryWindow, workspaceId: number) {
  const failed = db
    .selectFrom('deliveries')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where((eb) => ('connectorId' in endpoint ? eb('connector_id', '=', endpoint.connectorId) : eb('workflow_id', '=', endpoint.workflowId)))
    .where('branch', '=', 'Failed')
    .where('event', '!=', 'test')
    .where('finished_at', '>=', window.since)
    .where('finished_at', '<=', window.until ?? sql<string>`now()`);
  const rows = await db
    .with('failed', () => failed)
    .with('recovered', (qb) =>
      qb
        .updateTable('deliveries')
        .set({ ...NEW_SERIES, recovered_at: sql<string>`now()` })
        .where('workspace_id', '=', workspaceId)
        .where('id', 'in', (eb) => eb.selectFrom('failed').select('id'))
        .where('branch', '=', 'Failed')
        .where('attempts', '>', 0)
        .where('recovered_at', 'is', null)
        .returning(NEW_SERIES_RETURNED),
    )
    .selectFrom('failed')
    .leftJoin('recovered', 'recovered.id', 'failed.id')
    .select(['failed.id', 'recovered.message_id'])
    .orderBy('failed.id')
    .execute();
  const recovered = rows.filter((row) => row.message_id !== null);
  return { recovered: recovered.length, skipped: rows.length - recovered.length, delivery_ids: recovered.map((row) => row.id) };
}
