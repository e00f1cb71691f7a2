import type { ColumnType, Generated } from 'kysely';
import type { Json, JsonWithDefault, NullableTimestamp, Timestamp } from './column-types.js';

// Row types of the outbound tables: connectors, workflows, deliveries and their attempts, and
// what the worker keeps per endpoint.

export type WebhookMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type BodyFormat = 'json' | 'form';
export type ConnectorAuth =
  | { type: 'none' }
  | { type: 'bearer'; token: string }
  | { type: 'header'; name: string; value: string }
  | { type: 'basic'; username: string; password: string };
export interface FieldMapping {
  attribute: string;
  key: string;
}
export interface KeyValue {
  key: string;
  value: string;
}

export interface ConnectorsTable {
  id: Generated<number>;
  workspace_id: number;
  kind: Generated<'webhook'>;
  url: string;
  method: WebhookMethod;
  format: BodyFormat;
  auth: JsonWithDefault<ConnectorAuth>;
  mapping: JsonWithDefault<FieldMapping[]>;
  fields: JsonWithDefault<KeyValue[]>;
  headers: JsonWithDefault<KeyValue[]>;
  auto_push: Generated<boolean>;
  /** Sealed (src/secrets/keyring.ts), as the credential inside auth. */
  signing_secret: string;
  /** After rotate-secret: the previous secret, still signing until the overlap ends. */
  previous_signing_secret: string | null;
  previous_secret_expires_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
  created_at: Timestamp;
}

export type WorkflowTrigger = 'lead_created' | 'tag_added';
export type WorkflowBlock =
  | { endpoint: 'connector'; connector_id: number; fields: KeyValue[] }
  | { endpoint: 'url'; url: string; method: WebhookMethod; format: BodyFormat; headers: KeyValue[]; fields: KeyValue[] }
  /** The Send to CRM block: the connector's own push (event `lead`), not a Send Webhook block. */
  | { endpoint: 'crm'; connector_id: number; fields: KeyValue[] };

export interface WorkflowsTable {
  id: Generated<number>;
  workspace_id: number;
  trigger: WorkflowTrigger;
  tag_id: number | null;
  block: Json<WorkflowBlock>;
  signing_secret: string;
  active: Generated<boolean>;
  /** When last activated; null: active since created. Earlier events are not fanned out to it. */
  active_since: NullableTimestamp;
  /** `workflow delete`: never fanned out to or sent for again; hidden from `workflow list`. */
  deleted_at: NullableTimestamp;
  created_at: Timestamp;
}

export type DeliveryEvent = 'lead' | 'workflow' | 'test' | 'lead_erased';
/** `erasure_notice`: the `lead_erased` notice to an endpoint that received an erased lead (src/erasure/). */
export type DeliverySender = 'connector_push' | 'saved_connector' | 'custom_url' | 'test' | 'erasure_notice';
export type DeliveryBranch = 'pending' | 'Delivered' | 'Failed';
export interface HeaderRow {
  name: string;
  value: string;
}

export interface DeliveriesTable {
  id: Generated<number>;
  workspace_id: number;
  event: DeliveryEvent;
  sender: DeliverySender;
  trigger: string;
  connector_id: number | null;
  workflow_id: number | null;
  lead_id: number | null;
  outbox_id: number | null;
  message_id: string;
  url: string;
  method: string;
  headers: JsonWithDefault<HeaderRow[]>;
  body: string | null;
  content_type: string | null;
  max_attempts: number;
  /** The series of attempts in progress: 1 for the original sending, one more per replay. */
  series: Generated<number>;
  /** Attempts of the current series. */
  attempts: Generated<number>;
  branch: Generated<DeliveryBranch>;
  status_code: number | null;
  error: string | null;
  reply: string | null;
  next_attempt_at: Timestamp;
  locked_until: NullableTimestamp;
  locked_by: string | null;
  created_at: Timestamp;
  finished_at: NullableTimestamp;
  /** The trace context of the event it was fanned out from (outbox.trace_context); null untraced. */
  trace_context: ColumnType<string | null, string | null | undefined, string | null>;
  /** When `deliveries recover` sent this Failed delivery again; a later recovery skips it. */
  recovered_at: NullableTimestamp;
  /** Answers 429 of the current series that postponed it without counting as an attempt. */
  rate_limited: Generated<number>;
}

export interface DeliveryAttemptsTable {
  workspace_id: number;
  delivery_id: number;
  series: Generated<number>;
  attempt: number;
  status_code: number | null;
  error: string | null;
  reply: string | null;
  duration_ms: number;
  created_at: Timestamp;
  /** The trace the attempt's span belongs to; null untraced. */
  trace_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A webhook endpoint: a connector, or a workflow's Custom URL block. */
export type EndpointKind = 'connector' | 'workflow';

/** What the worker keeps about an endpoint (migration 0009): its health, its cap and the cap's slots. */
export interface EndpointsTable {
  workspace_id: number;
  kind: EndpointKind;
  endpoint_id: number;
  /** Deliveries per second at most; null: no cap. */
  max_per_second: number | null;
  /** The earliest the endpoint's next delivery may go (the cap's slots, a 429 pause). */
  next_slot_at: Timestamp;
  /** Where the next delivery that found no free slot is scheduled. */
  queued_until: Timestamp;
  /** The first failed attempt of the current run of failures (none delivered since). */
  failing_since: NullableTimestamp;
  consecutive_failures: Generated<number>;
  disabled_at: NullableTimestamp;
  disabled_reason: string | null;
}
