import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { ConnectorRow, DeliveryEvent, DeliverySender, HeaderRow, KeyValue, NewDelivery, WorkflowBlock } from '../db/schema.js';
import { authHeaders, mergeHeaders, sanitizeHeaders } from './headers.js';
import { checkUrlShape, RefusedDestination } from './network-guard.js';
import { constantFields, encodePayload, mappedFields, methodCarriesBody, renderMergeTags, renderUrl, type Payload } from './payload.js';

type Lead = components['schemas']['Lead'];

// Composes delivery rows: the request as it will be sent on every attempt (URL after merge
// tags, sanitized headers, encoded payload) under one message id. A configuration error
// becomes a delivery that is already Failed, so it is recorded and never called.

export interface DeliveryOrigin {
  workspaceId: number;
  /** What started it: lead_created, tag_added, auto_push, push, test. */
  trigger: string;
  outboxId?: number | null;
  maxAttempts: number;
}

const USER_AGENT = 'LeadIntake-Webhooks/1.0';

/** The response timestamp shape with six fractional digits. */
export const sentAtNow = () => new Date().toISOString().replace(/Z$/, '000Z');

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

function request(origin: DeliveryOrigin, target: DeliveryTarget & {
  method: string;
  format: 'json' | 'form';
  headers: HeaderRow[];
  payload: Payload;
  signingSecret: string;
}): NewDelivery {
  const carriesBody = methodCarriesBody(target.method);
  const contentType = target.format === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
  // GET and DELETE carry the payload as a query string, always form-encoded.
  const body = carriesBody ? encodePayload(target.payload, target.format) : encodePayload(target.payload, 'form');
  const headers = mergeHeaders(
    [{ name: 'User-Agent', value: USER_AGENT }],
    carriesBody ? [{ name: 'Content-Type', value: contentType }] : [],
    target.headers,
  );
  return {
    ...deliveryRow(origin, target),
    headers: JSON.stringify(Object.entries(headers).map(([name, value]) => ({ name, value }))),
    body,
    content_type: carriesBody ? contentType : null,
    signing_secret: target.signingSecret,
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

/** A sample lead for Send test: the connector's mapping rendered on something realistic. */
export const SAMPLE_LEAD: Lead = {
  id: null,
  name: 'Jane Doe',
  job_title: 'Head of Sales',
  description: null,
  gender: null,
  language: 'en',
  decision_maker: true,
  stage: 'new',
  source: 'api',
  emails: ['jane.doe@example.com'],
  phones: ['+14155550100'],
  links: [{ type: 'linkedin', url: 'https://www.linkedin.com/in/janedoe' }],
  location: null,
  tags: [],
  company: null,
  custom_fields: {},
  created_at: '2026-01-01T00:00:00.000000Z',
  updated_at: '2026-01-01T00:00:00.000000Z',
};

/**
 * Connector push (auto-push, Push to CRM), Send test, and the Saved-connector block:
 * constant fields, then mapped fields (or the default set), then the envelope; a block's
 * fields go on top and may override the envelope.
 */
export function composeConnectorDelivery(origin: DeliveryOrigin, input: {
  connectorId: number;
  connector: ConnectorRow | undefined;
  event: DeliveryEvent;
  lead: Lead | null;
  block?: { workflowId: number; fields: KeyValue[] };
  /** A Send to CRM block: the connector's push, run by this workflow. */
  workflowId?: number;
}): NewDelivery {
  const sender: DeliverySender = input.block ? 'saved_connector' : input.event === 'test' ? 'test' : 'connector_push';
  const base = { event: input.event, sender, connectorId: input.connectorId, workflowId: input.block?.workflowId ?? input.workflowId ?? null, leadId: input.lead?.id ?? null };
  const problem = connectorProblem(input.connector, origin.workspaceId, input.connectorId);
  if (problem) return failedDelivery(origin, { ...base, url: input.connector?.url ?? '', error: problem });
  const connector = input.connector!;
  if (input.event !== 'test' && !input.lead) {
    return failedDelivery(origin, { ...base, url: connector.url, method: connector.method, error: 'No lead in this run: a Saved connector needs one.' });
  }
  const refused = urlProblem(connector.url);
  if (refused) return failedDelivery(origin, { ...base, url: connector.url, method: connector.method, error: refused });

  const lead = input.lead ?? SAMPLE_LEAD;
  const payload: Payload = {
    ...constantFields(connector.fields),
    ...mappedFields(lead, connector.mapping),
    event: input.event,
    lead_id: input.lead?.id ?? null,
    sent_at: sentAtNow(),
  };
  if (input.block) {
    for (const { key, value } of input.block.fields) payload[key] = renderMergeTags(value, { lead: input.lead });
  }
  return request(origin, {
    ...base,
    url: connector.url,
    method: connector.method,
    format: connector.format,
    headers: [...sanitizeHeaders(connector.headers), ...authHeaders(connector.auth)],
    payload,
    signingSecret: connector.signing_secret,
  });
}

const CUSTOM_URL_ENVELOPE = new Set(['event', 'lead_id', 'workflow_id', 'sent_at']);

/**
 * Custom URL block: merge tags rendered in the URL (URL-encoded), headers and fields;
 * the block's own envelope wins over a colliding field; without a lead `lead_id` is omitted
 * and a block field of that name survives.
 */
export function composeCustomUrlDelivery(origin: DeliveryOrigin, input: {
  workflowId: number;
  block: Extract<WorkflowBlock, { endpoint: 'url' }>;
  lead: Lead | null;
  signingSecret: string;
}): NewDelivery {
  const context = { lead: input.lead };
  const url = renderUrl(input.block.url, context).trim();
  const base = { event: 'workflow' as const, sender: 'custom_url' as const, workflowId: input.workflowId, leadId: input.lead?.id ?? null };
  const refused = urlProblem(url);
  if (refused) return failedDelivery(origin, { ...base, url, method: input.block.method, error: refused });

  const envelope: Payload = { event: 'workflow' };
  if (input.lead) envelope.lead_id = input.lead.id;
  envelope.workflow_id = input.workflowId;
  envelope.sent_at = sentAtNow();
  const fields: Payload = {};
  for (const { key, value } of input.block.fields) {
    if (CUSTOM_URL_ENVELOPE.has(key) && key in envelope) continue;
    fields[key] = renderMergeTags(value, context);
  }
  const headers = sanitizeHeaders(input.block.headers.map(({ key, value }) => ({ key, value: renderMergeTags(value, context) })));
  return request(origin, {
    ...base,
    url,
    method: input.block.method,
    format: input.block.format,
    headers,
    payload: { ...fields, ...envelope },
    signingSecret: input.signingSecret,
  });
}
