import type { Executor } from '../db/connect.js';
import type { DeliveryBranch } from '../db/schema.js';

// The console's delivery log: newest first, filtered, a page at a time from a keyset (an id).

export interface DeliveryLogFilter {
  connectorId?: number;
  workflowId?: number;
  leadId?: number;
  branch?: DeliveryBranch;
  /** Created at or after / before this instant. */
  since?: string;
  until?: string;
  before?: number;
  limit: number;
}

export async function listDeliveryPage(db: Executor, workspaceId: number, filter: DeliveryLogFilter) {
  let query = db
    .selectFrom('deliveries')
    .select(['id', 'event', 'sender', 'lead_id', 'connector_id', 'workflow_id', 'branch', 'status_code', 'attempts', 'created_at', 'finished_at'])
    .where('workspace_id', '=', workspaceId);
  if (filter.connectorId !== undefined) query = query.where('connector_id', '=', filter.connectorId);
  if (filter.workflowId !== undefined) query = query.where('workflow_id', '=', filter.workflowId);
  if (filter.leadId !== undefined) query = query.where('lead_id', '=', filter.leadId);
  if (filter.branch !== undefined) query = query.where('branch', '=', filter.branch);
  if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('created_at', '<=', filter.until);
  if (filter.before !== undefined) query = query.where('id', '<', filter.before);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  return { deliveries: rows.slice(0, filter.limit), next: rows.length > filter.limit ? rows[filter.limit - 1]!.id : null };
}
