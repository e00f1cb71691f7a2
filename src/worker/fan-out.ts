import { findConnectors } from '../connectors/repository.js';
import type { Db } from '../db/connect.js';
import type { NewDelivery, WorkflowRow } from '../db/schema.js';
import { composeConnectorDelivery, composeCustomUrlDelivery } from '../deliveries/compose.js';
import { insertDeliveries } from '../deliveries/repository.js';
import { loadLeads } from '../leads/read-service.js';
import { markLeadsAnalyzed } from '../leads/write-repository.js';
import type { WorkerMetrics } from '../metrics/metrics.js';
import { dueEventWorkspaces, LEAD_EVENT_TOPICS, lockDueLeadEvents, markProcessed, type LeadEvent } from '../outbox/repository.js';
import { findActiveWorkflows } from '../workflows/repository.js';
import { eventSpans, inSpan, linksTo, storedContext, type Span } from '../tracing/spans.js';
import { composeAutoPushes } from './auto-push.js';
import { countFailedAtOnce } from './deliveries/counts.js';
import { composeErasureNotices } from './erasure-notices.js';
import type { PeriodicTask } from './scheduler.js';
import type { JobDeps } from './worker-deps.js';
import { WorkspaceTurns } from './workspace-turns.js';

const FAN_OUT_BATCH = 500;
/**
 * After a step that found events but fewer than a batch, the next waits this long: under a
 * steady stream of new leads a step at once would find only the few written meanwhile, and
 * each step is a dozen statements whatever it carries.
 */
const FAN_OUT_GATHER_MS = 100;

/** Lead events into deliveries, a batch per workspace in turn a step; new deliveries wake the other tasks. */
export function fanOutTask(deps: JobDeps): PeriodicTask {
  const options = { limit: FAN_OUT_BATCH, maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS, metrics: deps.metrics.worker };
  const turns = new WorkspaceTurns(dueLeadEventWorkspaces(deps.db));
  let gather = false;
  return {
    name: 'fan-out',
    intervalMs: deps.config.OUTBOX_POLL_MS,
    feeds: ['delivery'],
    async step(pacing) {
      if (gather) await pacing.sleep(FAN_OUT_GATHER_MS);
      const events = await fanOutLeadEvents(deps.db, turns, options);
      gather = events > 0 && events < FAN_OUT_BATCH;
      return events;
    },
  };
}

function firesFor(workflow: WorkflowRow, event: LeadEvent): boolean {
  if (workflow.workspace_id !== event.workspace_id) return false;
  // Both are the database's timestamps in one fixed-width format: they compare as strings.
  if (workflow.active_since !== null && event.created_at < workflow.active_since) return false;
  if (event.topic === 'lead.created') return workflow.trigger === 'lead_created';
  if (event.topic === 'lead.erased') return false;
  return workflow.trigger === 'tag_added' && workflow.tag_id === event.payload.tag_id;
}

/**
 * Turns lead events into deliveries: `lead.created` runs the lead_created workflows (and
 * auto-push once the lead counts as analyzed), `lead.tag_added` runs that tag's workflows,
 * `lead.erased` tells each endpoint that received the lead.
 * Claiming the events, writing the deliveries and marking the events processed happen in
 * one transaction, so an event is fanned out exactly once even with many workers.
 */
async function fanOutLeadEvents(db: Db, turns: WorkspaceTurns, options: FanOutOptions): Promise<number> {
  let events = 0;
  for (const workspaceId of await turns.next()) {
    events += await fanOutWorkspaceEvents(db, workspaceId, options);
    turns.served(workspaceId);
  }
  return events;
}

/** The workspaces whose lead events are due, in turn (see WorkspaceTurns). */
const dueLeadEventWorkspaces = (db: Db) => (after: number, limit: number) => dueEventWorkspaces(db, [...LEAD_EVENT_TOPICS], after, limit);

interface FanOutOptions {
  limit: number;
  maxAttempts: number;
  metrics: WorkerMetrics;
}

/**
 * One workspace's due lead events, up to `limit`, in one transaction whose every statement
 * names the workspace. Traced: the batch is a span linked to each event's trace, and each
 * event that carries a trace context gets a span of its own in that trace, which its
 * deliveries continue (they keep the context).
 */
async function fanOutWorkspaceEvents(db: Db, workspaceId: number, options: FanOutOptions): Promise<number> {
  const started = Date.now();
  const fannedOut = await inSpan('outbox fan-out', { attributes: { 'lead_intake.workspace_id': workspaceId } }, (batch) => fanOutInTransaction(db, workspaceId, options, batch));
  eventSpans('outbox fan-out', started, fannedOut.traced, fannedOut.batch);
  countFailedAtOnce(options.metrics, fannedOut.deliveries);
  return fannedOut.events;
}

async function fanOutInTransaction(db: Db, workspaceId: number, options: FanOutOptions, batch: Span | undefined) {
  return db.transaction().execute(async (trx) => {
    const events = await lockDueLeadEvents(trx, workspaceId, options.limit);
    if (events.length === 0) return { events: 0, deliveries: [], traced: [], batch };
    batch?.addLinks(linksTo(events.map((event) => storedContext(event.trace_context))));

    const workflows = await findActiveWorkflows(trx, [workspaceId]);
    const runs = events.flatMap((event) => workflows.filter((workflow) => firesFor(workflow, event)).map((workflow) => ({ event, workflow })));
    const created = events.filter((event) => event.topic === 'lead.created');
    const analyzed = await markLeadsAnalyzed(
      trx,
      workspaceId,
      created.map((event) => event.payload.lead_id),
    );

    const leads = await loadLeads(trx, [...runs.map(({ event }) => ({ id: event.payload.lead_id, workspace_id: event.workspace_id })), ...analyzed]);
    const connectorIds = runs.flatMap(({ workflow }) => (workflow.block.endpoint === 'url' ? [] : [workflow.block.connector_id]));
    const connectors = await findConnectors(trx, connectorIds, workspaceId);

    const deliveries: NewDelivery[] = runs.map(({ event, workflow }) => {
      const origin = { workspaceId: event.workspace_id, trigger: workflow.trigger, outboxId: event.id, maxAttempts: options.maxAttempts };
      const lead = leads.get(event.payload.lead_id) ?? null;
      const block = workflow.block;
      if (block.endpoint === 'crm') {
        return composeConnectorDelivery(origin, {
          connectorId: block.connector_id,
          connector: connectors.get(block.connector_id),
          event: 'lead',
          lead,
          workflowId: workflow.id,
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
      return composeCustomUrlDelivery(origin, { workflowId: workflow.id, block, lead });
    });
    runs.forEach(({ event }, index) => (deliveries[index]!.trace_context = event.trace_context));
    const createdBy = new Map(created.map((event) => [event.payload.lead_id, event]));
    const autoPushes = await composeAutoPushes(trx, analyzed, (leadId) => createdBy.get(leadId)?.id ?? null, options.maxAttempts, leads);
    for (const push of autoPushes) push.trace_context = createdBy.get(push.lead_id!)?.trace_context ?? null;
    deliveries.push(...autoPushes, ...(await composeErasureNotices(trx, workspaceId, events, options.maxAttempts)));
    await insertDeliveries(trx, deliveries);
    await markProcessed(
      trx,
      workspaceId,
      events.map((event) => event.id),
    );
    return { events: events.length, deliveries, traced: events.map((event) => event.trace_context), batch };
  });
}
