import { recordAudit, type Actor } from '../audit/service.js';
import type { Executor } from '../db/connect.js';
import { inTransaction } from '../db/transaction.js';
import { enableEndpoint, type EndpointRef } from './repository.js';

// What `connector enable` / `workflow enable` do once they know the endpoint exists (deleting
// one: deleteEndpoint in src/deliveries/service.ts, as it finishes the endpoint's deliveries).

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
