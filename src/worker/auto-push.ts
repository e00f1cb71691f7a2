import type { Lead } from '../../generated/api.js';
import { findAutoPushConnectors } from '../connectors/repository.js';
import type { Executor } from '../db/connect.js';
import type { NewDelivery } from '../db/schema.js';
import { composeConnectorDelivery } from '../deliveries/compose.js';
import { loadLeads } from '../leads/read-service.js';
import type { LeadRef } from '../leads/write-repository.js';

/**
 * Auto-push: one connector push per analyzed lead and auto-push connector of its workspace.
 * `leads`: the leads already loaded in the API's shape, if any.
 */
export async function composeAutoPushes(
  db: Executor,
  analyzed: readonly LeadRef[],
  outboxIdOf: (leadId: number) => number | null,
  maxAttempts: number,
  leads?: Map<number, Lead>,
): Promise<NewDelivery[]> {
  if (analyzed.length === 0) return [];
  const connectors = await findAutoPushConnectors(
    db,
    analyzed.map((lead) => lead.workspace_id),
  );
  if (connectors.length === 0) return [];
  const loaded = leads ?? (await loadLeads(db, analyzed));
  return analyzed.flatMap((ref) =>
    connectors
      .filter((connector) => connector.workspace_id === ref.workspace_id)
      .map((connector) =>
        composeConnectorDelivery(
          { workspaceId: ref.workspace_id, trigger: 'auto_push', outboxId: outboxIdOf(ref.id), maxAttempts },
          { connectorId: connector.id, connector, event: 'lead', lead: loaded.get(ref.id) ?? null },
        ),
      ),
  );
}
