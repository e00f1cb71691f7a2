import { findConnectors } from '../connectors/repository.js';
import type { Executor } from '../db/connect.js';
import type { NewDelivery } from '../db/schema.js';
import { composeErasureNotice } from '../deliveries/compose.js';
import type { LeadEvent, StoredEvent } from '../outbox/repository.js';
import { findWorkflows } from '../workflows/repository.js';

/**
 * The `lead_erased` notices of a fan-out batch's `lead.erased` events (written by an erasure,
 * src/erasure/service.ts): one delivery per endpoint the event names. The lead is gone; the
 * event carries all a notice needs.
 */
export async function composeErasureNotices(trx: Executor, workspaceId: number, events: readonly LeadEvent[], maxAttempts: number): Promise<NewDelivery[]> {
  const erased = events.filter((event): event is StoredEvent<'lead.erased'> & LeadEvent => event.topic === 'lead.erased');
  if (erased.length === 0) return [];
  const connectors = await findConnectors(
    trx,
    erased.flatMap((event) => event.payload.connector_ids),
    workspaceId,
  );
  const workflows = await findWorkflows(
    trx,
    erased.flatMap((event) => event.payload.workflow_ids),
    workspaceId,
  );
  return erased.flatMap((event) => {
    const origin = { workspaceId, trigger: 'lead_erased', outboxId: event.id, maxAttempts };
    const notice = { leadId: event.payload.lead_id, crmRecordId: event.payload.crm_record_id };
    const endpoints = [
      ...event.payload.connector_ids.map((connectorId) => ({ connectorId, connector: connectors.get(connectorId) })),
      ...event.payload.workflow_ids.map((workflowId) => ({ workflowId, workflow: workflows.get(workflowId) })),
    ];
    return endpoints.flatMap((endpoint) => {
      const delivery = composeErasureNotice(origin, notice, endpoint);
      if (delivery) delivery.trace_context = event.trace_context;
      return delivery ? [delivery] : [];
    });
  });
}
