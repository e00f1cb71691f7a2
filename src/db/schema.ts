import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { CompanyStatus } from '../../generated/api.js';

// Row types of the database (not of the API: API types come from generated/).
// Timestamps are read as API-formatted strings (see connect.ts) and written as Date or SQL.
type Timestamp = ColumnType<string, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<string | null, Date | string | null | undefined, Date | string | null>;
type Json<T> = ColumnType<T, string, string>;
/** A jsonb column with a database default: optional on insert, written as JSON text. */
type JsonWithDefault<T> = ColumnType<T, string | undefined, string>;

export interface LinkRow { type: string; url: string }
export interface LocationRow {
  country: string | null;
  state: string | null;
  city: string | null;
  address: string | null;
  zip_code: string | null;
}

export interface WorkspacesTable { id: Generated<number>; name: string; created_at: Timestamp }

export interface UsersTable {
  id: Generated<number>;
  workspace_id: number;
  email: string;
  role: 'admin' | 'member';
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: Generated<number>;
  workspace_id: number;
  user_id: number | null;
  name: string;
  prefix: string;
  token_hash: Buffer;
  scopes: string[];
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface TagsTable {
  id: Generated<number>;
  workspace_id: number;
  name: string;
  color: string | null;
  active: Generated<boolean>;
  created_at: Timestamp;
}

export interface CompaniesTable {
  id: Generated<number>;
  workspace_id: number;
  name: string | null;
  domain: string | null;
  industry: string | null;
  size: string | null;
  description: string | null;
  status: Generated<CompanyStatus>;
  links: JsonWithDefault<LinkRow[]>;
  emails: Generated<string[]>;
  phones: Generated<string[]>;
  locations: JsonWithDefault<LocationRow[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CompanyTagsTable { company_id: number; tag_id: number; created_at: Timestamp }

export interface LeadsTable {
  id: Generated<number>;
  workspace_id: number;
  company_id: number | null;
  name: string;
  job_title: string | null;
  description: string | null;
  gender: string | null;
  language: string | null;
  decision_maker: Generated<boolean>;
  stage: Generated<string>;
  source: string;
  chargeable: Generated<boolean>;
  emails: Generated<string[]>;
  phones: Generated<string[]>;
  links: JsonWithDefault<LinkRow[]>;
  locations: JsonWithDefault<LocationRow[]>;
  custom_fields: JsonWithDefault<Record<string, string>>;
  crm_record_id: string | null;
  analyzed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type IdentityKind = 'email' | 'linkedin' | 'phone';

export interface LeadIdentitiesTable { workspace_id: number; kind: IdentityKind; value: string; lead_id: number }

export interface LeadTagsTable { lead_id: number; tag_id: number; created_at: Timestamp }

export interface IdempotencyRecordsTable {
  api_key_id: number;
  key: string;
  fingerprint: string;
  status_code: number | null;
  response_body: Json<unknown> | null;
  created_at: Timestamp;
}

export interface OutboxTable {
  id: Generated<number>;
  workspace_id: number;
  topic: string;
  payload: Json<Record<string, unknown>>;
  attempts: Generated<number>;
  available_at: Timestamp;
  locked_until: NullableTimestamp;
  locked_by: string | null;
  processed_at: NullableTimestamp;
  last_error: string | null;
  created_at: Timestamp;
}

export type WebhookMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type BodyFormat = 'json' | 'form';
export type ConnectorAuth =
  | { type: 'none' }
  | { type: 'bearer'; token: string }
  | { type: 'header'; name: string; value: string }
  | { type: 'basic'; username: string; password: string };
export interface FieldMapping { attribute: string; key: string }
export interface KeyValue { key: string; value: string }

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
  created_at: Timestamp;
}

export type DeliveryEvent = 'lead' | 'workflow' | 'test';
export type DeliverySender = 'connector_push' | 'saved_connector' | 'custom_url' | 'test';
export type DeliveryBranch = 'pending' | 'Delivered' | 'Failed';
export interface HeaderRow { name: string; value: string }

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
  /** When `deliveries recover` sent this Failed delivery again; a later recovery skips it. */
  recovered_at: NullableTimestamp;
  /** Answers 429 of the current series that postponed it without counting as an attempt. */
  rate_limited: Generated<number>;
}

export interface DeliveryAttemptsTable {
  delivery_id: number;
  series: Generated<number>;
  attempt: number;
  status_code: number | null;
  error: string | null;
  reply: string | null;
  duration_ms: number;
  created_at: Timestamp;
}

/** A webhook endpoint: a connector, or a workflow's Custom URL block. */
export type EndpointKind = 'connector' | 'workflow';

/** What the worker keeps about an endpoint (migration 0009): its health, its cap and the cap's slots. */
export interface EndpointsTable {
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

export interface Database {
  workspaces: WorkspacesTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  tags: TagsTable;
  companies: CompaniesTable;
  company_tags: CompanyTagsTable;
  leads: LeadsTable;
  lead_identities: LeadIdentitiesTable;
  lead_tags: LeadTagsTable;
  idempotency_records: IdempotencyRecordsTable;
  outbox: OutboxTable;
  connectors: ConnectorsTable;
  workflows: WorkflowsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  endpoints: EndpointsTable;
}

export type ConnectorRow = Selectable<ConnectorsTable>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type NewDelivery = Insertable<DeliveriesTable>;
