import { sql } from 'kysely';
import type { components } from '../../generated/api.js';
import { findAutoPushConnectors, findConnectors } from '../connectors/repository.js';
import type { Db, Executor } from '../db/connect.js';
import type { NewDelivery, WorkflowRow } from '../db/schema.js';
import { presentLead } from '../leads/present.js';
import { findLeadRecords } from '../leads/read-repository.js';
import { findActiveWorkflows } from '../workflows/repository.js';
import { composeConnectorDelivery, composeCustomUrlDelivery } from './compose.js';
import { insertDeliveries } from './delivery-repository.js';

type Lead = components['schemas']['Lead'];

interface LeadRef { id: number; workspace_id: number }

interface OutboxEventRow {
  id: number;
  workspace_id: number;
  topic: 'lead.created' | 'lead.tag_added';
  payload: { lead_id: number; tag_id?: number };
}

/** Leads by id, in the API's Lead shape, one query per workspace involved. */
export async function loadLeads(db: Executor, refs: readonly LeadRef[]): Promise<Map<number, Lead>> {
  const byWorkspace = new Map<number, number[]>();
  for (const ref of refs) {
    const ids = byWorkspace.get(ref.workspace_id);
    if (ids) ids.push(ref.id);
    else byWorkspace.set(ref.workspace_id, [ref.id]);
  }
  const leads = new Map<number, Lead>();
  for (const [workspaceId, ids] of byWorkspace) {
    for (const record of await findLeadRecords(db, workspaceId, [...new Set(ids)])) leads.set(record.id, presentLead(record));
  }
  return leads;
}

/**
 * Marks leads analyzed unless their company's website analysis is still pending; returns
 * only the leads this call moved, so each lead is auto-pushed once however events interleave.
 */
export async function markLeadsAnalyzed(db: Executor, leadIds: readonly number[]): Promise<LeadRef[]> {
  if (leadIds.length === 0) return [];
  const result = await sql<LeadRef>`
    UPDATE leads AS l SET analyzed_at = now()
    WHERE l.id = ANY(${sql.val([...leadIds])}::bigint[]) AND l.analyzed_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM companies AS c WHERE c.id = l.company_id AND c.status = 'pending')
    RETURNING l.id, l.workspace_id
  `.execute(db);
  return result.rows;
}

/** Auto-push: one connector push per analyzed lead and auto-push connector of its workspace. */
export async function composeAutoPushes(db: Executor, analyzed: readonly LeadRef[], outboxIdOf: (leadId: number) => number | null, maxAttempts: number, leads?: Map<number, Lead>): Promise<NewDelivery[]> {
  if (analyzed.length === 0) return [];
  const connectors = await findAutoPushConnectors(db, analyzed.map((lead) => lead.workspace_id));
  if (connectors.length === 0) return [];
  const loaded = leads ?? await loadLeads(db, analyzed);
  return analyzed.flatMap((ref) => connectors.filter((connector) => connector.workspace_id === ref.workspace_id).map((connector) =>
    composeConnectorDelivery(
      { workspaceId: ref.workspace_id, trigger: 'auto_push', outboxId: outboxIdOf(ref.id), maxAttempts },
      { connectorId: connector.id, connector, event: 'lead', lead: loaded.get(ref.id) ?? null },
    )));
}

function firesFor(workflow: WorkflowRow, event: OutboxEventRow): boolean {
  if (workflow.workspace_id !== event.workspace_id) return false;
  if (event.topic === 'lead.created') return workflow.trigger === 'lead_created';
  return workflow.trigger === 'tag_added' && workflow.tag_id === event.payload.tag_id;
}

/**
 * Turns lead events into deliveries: `lead.created` runs the lead_created workflows (and
 * auto-push once the lead counts as analyzed), `lead.tag_added` runs that tag's workflows.
 * Claiming the events, writing the deliveries and marking the events processed happen in
 * one transaction, so an event is fanned out exactly once even with many workers.
 */
export async function fanOutLeadEvents(db: Db, options: { limit: number; maxAttempts: number }): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const events = (await sql<OutboxEventRow>`
      SELECT id, workspace_id, topic, payload FROM outbox
      WHERE processed_at IS NULL AND available_at <= now() AND topic IN ('lead.created', 'lead.tag_added')
      ORDER BY id LIMIT ${options.limit}
      FOR UPDATE SKIP LOCKED
    `.execute(trx)).rows;
    if (events.length === 0) return 0;

    const workflows = await findActiveWorkflows(trx, events.map((event) => event.workspace_id));
    const runs = events.flatMap((event) => workflows.filter((workflow) => firesFor(workflow, event)).map((workflow) => ({ event, workflow })));
    const analyzed = await markLeadsAnalyzed(trx, events.filter((event) => event.topic === 'lead.created').map((event) => event.payload.lead_id));

    const leads = await loadLeads(trx, [...runs.map(({ event }) => ({ id: event.payload.lead_id, workspace_id: event.workspace_id })), ...analyzed]);
    const connectorIds = runs.flatMap(({ workflow }) => (workflow.block.endpoint === 'url' ? [] : [workflow.block.connector_id]));
    const connectors = await findConnectors(trx, connectorIds);

    const deliveries: NewDelivery[] = runs.map(({ event, workflow }) => {
      const origin = { workspaceId: event.workspace_id, trigger: workflow.trigger, outboxId: event.id, maxAttempts: options.maxAttempts };
      const lead = leads.get(event.payload.lead_id) ?? null;
      const block = workflow.block;
      if (block.endpoint === 'crm') {
        return composeConnectorDelivery(origin, {
          connectorId: block.connector_id, connector: connectors.get(block.connector_id), event: 'lead', lead, workflowId: workflow.id,
        });
      }
      if (block.endpoint === 'connector') {
        return composeConnectorDelivery(origin, {
          connectorId: block.connector_id,
          connector: connectors.get(block.connector_id),
          event: 'workflow',
          lead,
          block: { workflowId: workflow.id, fields: block.fields },
        });
      }
      return composeCustomUrlDelivery(origin, { workflowId: workflow.id, block, lead, signingSecret: workflow.signing_secret });
    });
    const createdBy = new Map(events.filter((event) => event.topic === 'lead.created').map((event) => [event.payload.lead_id, event.id]));
    deliveries.push(...await composeAutoPushes(trx, analyzed, (leadId) => createdBy.get(leadId) ?? null, options.maxAttempts, leads));
    await insertDeliveries(trx, deliveries);
    await trx.updateTable('outbox').set({ processed_at: new Date(), locked_by: null, locked_until: null })
      .where('id', 'in', events.map((event) => event.id)).execute();
    return events.length;
  });
}
