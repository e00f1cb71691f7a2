import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { CompanyStatus, LeadStage, Link, Location } from '../../generated/api.js';
import type { Json, JsonWithDefault, NullableTimestamp, Timestamp } from './column-types.js';
import type { AuditLogTable } from './audit-schema.js';
import type { ConsoleSessionsTable, ConsoleSignInFailuresTable, ConsoleSignInLinksTable } from './console-schema.js';
import type { ConnectorsTable, DeliveriesTable, DeliveryAttemptsTable, EndpointsTable, WorkflowsTable } from './outbound-schema.js';

// Row types of the database (not of the API: API types come from generated/); the outbound
// tables' rows are in outbound-schema.ts.

export type * from './outbound-schema.js';

/**
 * A stored location: the API's, but an update merges one into another with its null parts
 * stripped (leads/write-repository.ts), so any part may be absent.
 */
export type StoredLocation = Partial<Location>;

export interface WorkspacesTable {
  id: Generated<number>;
  name: string;
  created_at: Timestamp;
}

export interface UsersTable {
  id: Generated<number>;
  workspace_id: number;
  email: string;
  role: 'admin' | 'member';
  /** argon2id, NULL until a password is set (migration 0012). */
  password_hash: string | null;
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
  links: JsonWithDefault<Link[]>;
  emails: Generated<string[]>;
  phones: Generated<string[]>;
  locations: JsonWithDefault<StoredLocation[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CompanyTagsTable {
  workspace_id: number;
  company_id: number;
  tag_id: number;
  created_at: Timestamp;
}

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
  stage: Generated<LeadStage>;
  source: string;
  chargeable: Generated<boolean>;
  emails: Generated<string[]>;
  phones: Generated<string[]>;
  links: JsonWithDefault<Link[]>;
  locations: JsonWithDefault<StoredLocation[]>;
  custom_fields: JsonWithDefault<Record<string, string>>;
  crm_record_id: string | null;
  analyzed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type IdentityKind = 'email' | 'linkedin' | 'phone';

export interface LeadIdentitiesTable {
  workspace_id: number;
  kind: IdentityKind;
  value: string;
  lead_id: number;
}

export interface LeadTagsTable {
  workspace_id: number;
  lead_id: number;
  tag_id: number;
  created_at: Timestamp;
}

export interface IdempotencyRecordsTable {
  workspace_id: number;
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
  /** The W3C trace context of the request that wrote the event (JSON of traceparent and tracestate); null untraced. */
  trace_context: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A contact detail of a person who asked not to be stored again: its keyed digest only (src/secrets/contact-digest.ts). */
export interface SuppressedContactsTable {
  workspace_id: number;
  digest: Buffer;
  kind: IdentityKind;
  created_at: Timestamp;
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
  console_sessions: ConsoleSessionsTable;
  console_sign_in_links: ConsoleSignInLinksTable;
  console_sign_in_failures: ConsoleSignInFailuresTable;
  suppressed_contacts: SuppressedContactsTable;
  audit_log: AuditLogTable;
}

export type TagRow = Selectable<TagsTable>;
export type CompanyRow = Selectable<CompaniesTable>;
export type LeadRow = Selectable<LeadsTable>;
export type ConnectorRow = Selectable<ConnectorsTable>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type NewDelivery = Insertable<DeliveriesTable>;
