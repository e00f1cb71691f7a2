import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { ConnectorRow, DeliveryEvent, DeliverySender, HeaderRow, KeyValue, NewDelivery, WorkflowBlock, WorkflowRow } from '../db/schema.js';
import { jsonParameter } from '../db/sql.js';
import { deliveryHeaderSecrets, mapCredentialHeaders } from '../secrets/credential-headers.js';
import { mergeHeaders, sanitizeHeaders, type WebhookHeaders } from './headers.js';
import { checkUrlShape, RefusedDestination } from './network-guard.js';
import {
  customUrlBody,
  encodeBody,
  leadPushBody,
  methodCarriesBody,
  newFields,
  renderMergeTags,
  renderUrl,
  savedConnectorBody,
  leadErasedBody,
  sendTestBody,
  type MergeContext,
  type StoredLead,
  type WebhookBody,
} from './payload.js';

type Lead = components['schemas']['Lead'];

// Composes delivery rows: the request as it will be sent on every attempt (URL after merge
// tags, sanitized headers, encoded payload) under one message id. A configuration error
// becomes a delivery that is already Failed, so it is recorded and never called. Credentials
// and signing secrets are not part of the row: the sender adds them at send time
// (src/deliveries/credentials.ts).

export interface DeliveryOrigin {
  workspaceId: number;
  /** What started it: lead_created, tag_added, auto_push, push, test. */
  trigger: string;
  outboxId?: number | null;
  maxAttempts: number;
}

const USER_AGENT: WebhookHeaders['User-Agent'] = 'LeadIntake-Webhooks/1.0';

const newMessageId = () => `msg_${randomUUID().replaceAll('-', '')}`;

/** Who sends what to whom: the part every delivery row has, called or not. */
interface DeliveryTarget {
  event: DeliveryEvent;
  sender: DeliverySender;
  connectorId?: number | null;
  workflowId?: number | null;
  leadId: number | null;
  url: string;
  method?: string;
}

function deliveryRow(origin: DeliveryOrigin, target: DeliveryTarget): NewDelivery {
  return {
    workspace_id: origin.workspaceId,
    event: target.event,
    sender: target.sender,
    trigger: origin.trigger,
    connector_id: target.connectorId ?? null,
    workflow_id: target.workflowId ?? null,
    lead_id: target.leadId,
    outbox_id: origin.outboxId ?? null,
    message_id: newMessageId(),
    url: target.url,
    method: target.method ?? 'POST',
    max_attempts: origin.maxAttempts,
  };
}

function request(
  origin: DeliveryOrigin,
  target: DeliveryTarget & {
    method: string;
    format: 'json' | 'form';
    headers: HeaderRow[];
    body: WebhookBody;
  },
): NewDelivery {
  const carriesBody = methodCarriesBody(target.method);
  const contentType = target.format === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
  // GET and DELETE carry the fields as a query string, always form-encoded.
  const body = encodeBody(target.body, carriesBody ? target.format : 'form');
  const headers = mergeHeaders([{ name: 'User-Agent', value: USER_AGENT }], carriesBody ? [{ name: 'Content-Type', value: contentType }] : [], target.headers);
  const row = deliveryRow(origin, target);
  return {
    ...row,
    // Headers named like credentials are sealed in the row (src/secrets/credential-headers.ts).
    headers: jsonParameter(
      mapCredentialHeaders(
        Object.entries(headers).map(([name, value]) => ({ name, value })),
        deliveryHeaderSecrets(row).seal,
      ),
    ),
    body,
    content_type: carriesBody ? contentType : null,
  };
}

/** A configuration error: recorded as Failed, never called. */
export function failedDelivery(origin: DeliveryOrigin, target: DeliveryTarget & { error: string }): NewDelivery {
  return { ...deliveryRow(origin, target), branch: 'Failed', error: target.error, finished_at: new Date() };
}

/** Why a connector cannot be used by this workspace, or null when it can. */
export function connectorProblem(connector: ConnectorRow | undefined, workspaceId: number, connectorId: number): string | null {
  if (!connector || connector.workspace_id !== workspaceId) return `Connector ${connectorId} does not exist in this workspace.`;
  if (connector.deleted_at !== null) return `Connector ${connectorId} was deleted.`;
  if (connector.kind !== 'webhook') return `Connector ${connectorId} is not a webhook connector.`;
  return null;
}

function urlProblem(url: string): string | null {
  try {
    checkUrlShape(url);
    return null;
  } catch (error) {
    if (error instanceof RefusedDestination) return `refused: ${error.message}`;
    throw error;
  }
}

/** A lead loaded for a run always has an id; only a dry-run preview has none. */
const storedLead = (lead: Lead | null): StoredLead | null => (lead && lead.id !== null ? { ...lead, id: lead.id } : null);

/** A block's fields with merge tags rendered, later rows replacing earlier ones of the same key. */
const renderedFields = (rows: readonly KeyValue[], context: MergeContext): Record<string, string> =>
  newFields(...rows.map(({ key, value }) => ({ [key]: renderMergeTags(value, context) })));

/** The body of a connector's delivery, or null when it needs a lead and the run has none. */
function connectorBody(connector: ConnectorRow, event: DeliveryEvent, lead: StoredLead | null, blockFields?: readonly KeyValue[]): WebhookBody | null {
  if (event === 'test') return sendTestBody(connector);
  if (!lead) return null;
  return blockFields ? savedConnectorBody(connector, lead, renderedFields(blockFields, { lead })) : leadPushBody(connector, lead);
}

/**
 * Connector push (auto-push, Push to CRM), Send test, and the Saved-connector block:
 * constant fields, then mapped fields (or the default set), then the envelope; a block's
 * fields go on top and may override the envelope.
 */
export function composeConnectorDelivery(
  origin: DeliveryOrigin,
  input: {
    connectorId: number;
    connector: ConnectorRow | undefined;
    event: DeliveryEvent;
    lead: Lead | null;
    block?: { workflowId: number; fields: KeyValue[] };
    /** A Send to CRM block: the connector's push, run by this workflow. */
    workflowId?: number;
  },
): NewDelivery {
  const sender: DeliverySender = input.block ? 'saved_connector' : input.event === 'test' ? 'test' : 'connector_push';
  const base = { event: input.event, sender, connectorId: input.connectorId, workflowId: input.block?.workflowId ?? input.workflowId ?? null, leadId: input.lead?.id ?? null };
  const problem = connectorProblem(input.connector, origin.workspaceId, input.connectorId);
  if (problem) return failedDelivery(origin, { ...base, url: input.connector?.url ?? '', error: problem });
  const connector = input.connector!;
  const body = connectorBody(connector, input.event, storedLead(input.lead), input.block?.fields);
  if (!body) return failedDelivery(origin, { ...base, url: connector.url, method: connector.method, error: 'No lead in this run: a Saved connector needs one.' });
  const refused = urlProblem(connector.url);
  if (refused) return failedDelivery(origin, { ...base, url: connector.url, method: connector.method, error: refused });
  return request(origin, {
    ...base,
    url: connector.url,
    method: connector.method,
    format: connector.format,
    headers: sanitizeHeaders(connector.headers),
    body,
  });
}

/**
 * Custom URL block: merge tags rendered in the URL (URL-encoded), headers and fields;
 * the block's own envelope wins over a colliding field; without a lead `lead_id` is omitted
 * and a block field of that name survives.
 */
export function composeCustomUrlDelivery(
  origin: DeliveryOrigin,
  input: {
    workflowId: number;
    block: Extract<WorkflowBlock, { endpoint: 'url' }>;
    lead: Lead | null;
  },
): NewDelivery {
  const context = { lead: input.lead };
  const url = renderUrl(input.block.url, context).trim();
  const base = { event: 'workflow' as const, sender: 'custom_url' as const, workflowId: input.workflowId, leadId: input.lead?.id ?? null };
  const refused = urlProblem(url);
  if (refused) return failedDelivery(origin, { ...base, url, method: input.block.method, error: refused });

  const body = customUrlBody(input.workflowId, storedLead(input.lead), renderedFields(input.block.fields, context));
  const headers = sanitizeHeaders(input.block.headers.map(({ key, value }) => ({ key, value: renderMergeTags(value, context) })));
  return request(origin, {
    ...base,
    url,
    method: input.block.method,
    format: input.block.format,
    headers,
    body,
  });
}

/**
 * The `lead_erased` notice to an endpoint that received an erased lead: always POST JSON, ids
 * only; to the connector (its credentials added at send time) or the workflow's Custom URL (merge
 * tags rendered empty: the lead is gone). Null when the endpoint was deleted since, or the
 * workflow's block no longer has a URL of its own: nothing to tell.
 */
export function composeErasureNotice(
  origin: DeliveryOrigin,
  notice: { leadId: number; crmRecordId: string | null },
  endpoint: { connectorId: number; connector: ConnectorRow | undefined } | { workflowId: number; workflow: WorkflowRow | undefined },
): NewDelivery | null {
  const body = leadErasedBody(notice.leadId, notice.crmRecordId);
  const base = { event: 'lead_erased' as const, sender: 'erasure_notice' as const, leadId: notice.leadId, method: 'POST', format: 'json' as const, body };
  if ('connectorId' in endpoint) {
    if (connectorProblem(endpoint.connector, origin.workspaceId, endpoint.connectorId)) return null;
    const { url, headers } = endpoint.connector!;
    const refused = urlProblem(url);
    if (refused) return failedDelivery(origin, { ...base, connectorId: endpoint.connectorId, url, error: refused });
    return request(origin, { ...base, connectorId: endpoint.connectorId, url, headers: sanitizeHeaders(headers) });
  }
  const workflow = endpoint.workflow;
  if (!workflow || workflow.workspace_id !== origin.workspaceId || workflow.deleted_at !== null || workflow.block.endpoint !== 'url') return null;
  const context = { lead: null };
  const url = renderUrl(workflow.block.url, context).trim();
  const refused = urlProblem(url);
  if (refused) return failedDelivery(origin, { ...base, workflowId: workflow.id, url, error: refused });
  const headers = sanitizeHeaders(workflow.block.headers.map(({ key, value }) => ({ key, value: renderMergeTags(value, context) })));
  return request(origin, { ...base, workflowId: workflow.id, url, headers });
}
