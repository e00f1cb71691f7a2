import { recordAudit, type Actor } from '../audit/service.js';
import { softDeleteConnector } from '../connectors/repository.js';
import type { Db, Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { cancelPendingDeliveries } from '../deliveries/repository.js';
import { Refused } from '../refused.js';
import { softDeleteWorkflow } from '../workflows/repository.js';
import { enableEndpoint, type EndpointRef } from './repository.js';

// What `connector enable` / `workflow enable` do once they know the endpoint exists, and what
// `connector delete` / `workflow delete` do.

/**
 * Turns the endpoint back on (see enableEndpoint) and says what it was: enabling one that
 * is not disabled changes nothing but its failure count.
 */
export function enable(db: Executor, actor: Actor, endpoint: EndpointRef & { workspaceId: number }) {
  return inTransaction(db, async (trx) => {
    const before = await enableEndpoint(trx, endpoint);
    await recordAudit(trx, {
      actor,
      workspaceId: endpoint.workspaceId,
      action: endpoint.kind === 'connector' ? 'connector.enabled' : 'workflow.enabled',
      target: { type: endpoint.kind, id: endpoint.id },
      details: { was_disabled_at: before.disabled_at },
    });
    return { id: endpoint.id, enabled: true, was_disabled_at: before.disabled_at, was_disabled_reason: before.disabled_reason };
  });
}

/**
 * Deletes a connector, or a workflow (whatever its block sends to), so that it sends nothing
 * more: in one transaction it is marked deleted (no fan-out, auto-push, push, test, recovery
 * or listing any more) and every pending delivery of it, retries included, is finished
 * `Failed` without another attempt. A delivery of it composed by a fan-out that read it just
 * before the delete is refused by the worker without a call (src/worker/deliveries/load-credentials.ts); an
 * attempt already on the wire when the delete commits completes, and is the last.
 */
export async function deleteEndpoint(db: Db, actor: Actor, endpoint: EndpointRef) {
  const name = endpoint.kind === 'connector' ? 'Connector' : 'Workflow';
  return db.transaction().execute(async (trx) => {
    const deleted = endpoint.kind === 'connector' ? await softDeleteConnector(trx, endpoint.id) : await softDeleteWorkflow(trx, endpoint.id);
    if (!deleted) throw new Refused('not_found', `${name} ${endpoint.id} does not exist.`);
    const owner = endpoint.kind === 'connector' ? { connectorId: endpoint.id } : { workflowId: endpoint.id };
    const cancelled = await cancelPendingDeliveries(trx, owner, `cancelled: ${name.toLowerCase()} ${endpoint.id} was deleted, so nothing more is sent`);
    await recordAudit(trx, {
      actor,
      workspaceId: deleted.workspace_id,
      action: endpoint.kind === 'connector' ? 'connector.deleted' : 'workflow.deleted',
      target: { type: endpoint.kind, id: endpoint.id },
      details: { cancelled_deliveries: cancelled },
    });
    return { id: endpoint.id, deleted: true, cancelled_deliveries: cancelled };
  });
}
