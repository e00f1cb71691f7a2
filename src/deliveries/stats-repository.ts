import { sql } from 'kysely';
import type { Executor } from '../db/connect.js';

/** Per connector: its last delivery, and its finished deliveries and failures over the last 24 h. */
export async function connectorDeliveryStats(db: Executor, workspaceId: number, connectorIds: readonly number[]) {
  if (connectorIds.length === 0) return new Map<number, { last_delivery_at: string | null; finished_24h: number; failed_24h: number }>();
  const { rows } = await sql<{ connector_id: number; last_delivery_at: string | null; finished_24h: number; failed_24h: number }>`
    SELECT c.id::int AS connector_id,
      (SELECT max(d.created_at) FROM deliveries d WHERE d.connector_id = c.id AND d.workspace_id = ${workspaceId}) AS last_delivery_at,
      (SELECT count(*)::int FROM deliveries d WHERE d.connector_id = c.id AND d.workspace_id = ${workspaceId} AND d.finished_at > now() - interval '24 hours') AS finished_24h,
      (SELECT count(*)::int FROM deliveries d WHERE d.connector_id = c.id AND d.workspace_id = ${workspaceId} AND d.finished_at > now() - interval '24 hours' AND d.branch = 'Failed') AS failed_24h
    FROM unnest(${sql.val([...connectorIds])}::bigint[]) AS c(id)`.execute(db);
  return new Map(rows.map(({ connector_id, ...stats }) => [connector_id, stats]));
}
