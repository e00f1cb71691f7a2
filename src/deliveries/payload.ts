import type {
  CustomUrlWorkflowPayload,
  DefaultLeadFields,
  Lead,
  LeadErasedPayload,
  LeadPushEnvelope,
  LeadPushPayload,
  MappedLeadFields,
  SavedConnectorEnvelope,
  SavedConnectorWorkflowPayload,
  SendTestEnvelope,
  SendTestPayload,
  WebhookFieldValue,
} from '../../generated/api.js';
import type { ConnectorRow, FieldMapping, KeyValue } from '../db/schema.js';
import { firstLink } from '../links.js';

/** A lead as loaded from the database: it has an id (only a dry-run preview has none). */
export type StoredLead = Lead & { id: number };

// The functions below return the bodies the OpenAPI document gives each webhook, so a
// renamed or retyped envelope key fails the typecheck.
export type WebhookBody = LeadPushPayload | SendTestPayload | CustomUrlWorkflowPayload | SavedConnectorWorkflowPayload | LeadErasedPayload;
type CustomUrlEnvelope = Pick<CustomUrlWorkflowPayload, 'event' | 'lead_id' | 'workflow_id' | 'sent_at'>;

/** Fields under keys the workspace chose: receiver keys, constant fields, block fields. */
export type Fields = Record<string, WebhookFieldValue>;

/**
 * A field object without a prototype, filled from `parts` in order. Its keys come from
 * connector and workflow configuration, so `__proto__` or `constructor` must stay plain keys
 * on every assignment (they are sent as they are).
 */
export const newFields = <Value extends WebhookFieldValue>(...parts: Record<string, Value>[]): Record<string, Value> =>
  Object.assign(Object.create(null) as Record<string, Value>, ...parts);

/** `above` merged over `below` into a new prototype-free object, keeping both types. */
const layer = <Below extends object, Above extends object>(below: Below, above: Above): Below & Above => Object.assign(Object.assign(Object.create(null) as Below, below), above);

export const MAX_MAPPED_FIELDS = 50;
export const MAX_CONSTANT_FIELDS = 50;
export const MAX_HEADERS = 20;

// Every lead value a delivery can carry, by name: the attributes a connector mapping names
// (`--map attribute=receiver_key`, plus `custom_fields.<key>` for one custom field), the
// default field set and the merge tags are all read from here.
const LEAD_VALUES = {
  id: (lead) => lead.id,
  name: (lead) => lead.name,
  email: (lead) => lead.emails[0] ?? null,
  emails: (lead) => lead.emails,
  phone: (lead) => lead.phones[0] ?? null,
  phones: (lead) => lead.phones,
  job_title: (lead) => lead.job_title,
  description: (lead) => lead.description,
  gender: (lead) => lead.gender,
  language: (lead) => lead.language,
  decision_maker: (lead) => lead.decision_maker,
  stage: (lead) => lead.stage,
  source: (lead) => lead.source,
  linkedin_url: (lead) => firstLink(lead.links, 'linkedin'),
  website: (lead) => firstLink(lead.links, 'website'),
  country: (lead) => lead.location?.country ?? null,
  state: (lead) => lead.location?.state ?? null,
  city: (lead) => lead.location?.city ?? null,
  address: (lead) => lead.location?.address ?? null,
  zip_code: (lead) => lead.location?.zip_code ?? null,
  company: (lead) => lead.company?.name ?? null,
  company_id: (lead) => lead.company?.id ?? null,
  company_website: (lead) => lead.company?.website ?? null,
  company_linkedin_url: (lead) => lead.company?.linkedin_url ?? null,
  company_industry: (lead) => lead.company?.industry ?? null,
  company_size: (lead) => lead.company?.size ?? null,
  tags: (lead) => lead.tags.map((tag) => tag.name),
  custom_fields: (lead) => lead.custom_fields,
  created_at: (lead) => lead.created_at,
  updated_at: (lead) => lead.updated_at,
} satisfies Record<string, (lead: Lead) => WebhookFieldValue>;

// A Map, so only these names resolve (an object would also answer `constructor` or
// `__proto__` from its prototype).
const ATTRIBUTES = new Map<string, (lead: Lead) => WebhookFieldValue>(Object.entries(LEAD_VALUES));

export const MAPPABLE_ATTRIBUTES = [...ATTRIBUTES.keys(), 'custom_fields.<key>'];

export function isMappableAttribute(attribute: string): boolean {
  return ATTRIBUTES.has(attribute) || /^custom_fields\.[^.\s]+$/.test(attribute);
}

function attributeValue(lead: Lead, attribute: string): WebhookFieldValue {
  if (attribute.startsWith('custom_fields.')) {
    const key = attribute.slice('custom_fields.'.length);
    return Object.hasOwn(lead.custom_fields, key) ? lead.custom_fields[key]! : null;
  }
  return ATTRIBUTES.get(attribute)?.(lead) ?? null;
}

/** The fields sent when a connector has no mapping (the document's DefaultLeadFields). */
export function defaultFields(lead: Lead): DefaultLeadFields {
  const { id, name, email, phone, job_title, company, stage, tags } = LEAD_VALUES;
  return { id: id(lead), name: name(lead), email: email(lead), phone: phone(lead), job_title: job_title(lead), company: company(lead), stage: stage(lead), tags: tags(lead) };
}

/** Mapped lead attributes under the receiver's keys, or the default set without a mapping. */
export function leadFields(lead: Lead, mapping: readonly FieldMapping[]): DefaultLeadFields | MappedLeadFields {
  if (mapping.length === 0) return defaultFields(lead);
  return newFields(Object.fromEntries(mapping.slice(0, MAX_MAPPED_FIELDS).map(({ attribute, key }) => [key, attributeValue(lead, attribute)])));
}

const constantFields = (fields: readonly KeyValue[]): Fields => newFields(Object.fromEntries(fields.slice(0, MAX_CONSTANT_FIELDS).map(({ key, value }) => [key, value])));

/** Constant fields, then the mapped fields (or the default set) over them. */
const connectorFields = (connector: ConnectorRow, lead: Lead): Fields => newFields(constantFields(connector.fields), leadFields(lead, connector.mapping));

/** The response timestamp shape with six fractional digits. */
export const sentAtNow = () => new Date().toISOString().replace(/Z$/, '000Z');

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
  phones: ['14155550100'],
  links: [{ type: 'linkedin', url: 'https://www.linkedin.com/in/janedoe' }],
  location: null,
  tags: [],
  company: null,
  custom_fields: {},
  created_at: '2026-01-01T00:00:00.000000Z',
  updated_at: '2026-01-01T00:00:00.000000Z',
};

// ---- the bodies, one per webhook of the document ---------------------------------------
// Connector deliveries: constant fields, then mapped fields (or the default set), then the
// envelope, which the mapping cannot override. A Saved-connector block's fields go on top
// and may override the envelope; a Custom URL block's envelope wins over its fields.

/** Connector push (auto-push, Push to CRM, Send to CRM): webhook `lead`. */
export function leadPushBody(connector: ConnectorRow, lead: StoredLead): LeadPushPayload {
  const envelope: LeadPushEnvelope = { event: 'lead', lead_id: lead.id, sent_at: sentAtNow() };
  return layer(connectorFields(connector, lead), envelope);
}

/** Send test: webhook `test`, the connector's fields on the sample lead. */
export function sendTestBody(connector: ConnectorRow): SendTestPayload {
  const envelope: SendTestEnvelope = { event: 'test', lead_id: null, sent_at: sentAtNow() };
  return layer(connectorFields(connector, SAMPLE_LEAD), envelope);
}

/** A Send Webhook block with a saved connector: webhook `workflowSavedConnector`. */
export function savedConnectorBody(connector: ConnectorRow, lead: StoredLead, blockFields: Record<string, string>): SavedConnectorWorkflowPayload {
  const envelope: SavedConnectorEnvelope = { event: 'workflow', lead_id: lead.id, sent_at: sentAtNow() };
  return layer(layer(connectorFields(connector, lead), envelope), blockFields);
}

const CUSTOM_URL_ENVELOPE_KEYS = new Set(['event', 'lead_id', 'workflow_id', 'sent_at']);

/**
 * A Send Webhook block with a Custom URL: webhook `workflowCustomUrl`. A block field named
 * like an envelope key is dropped, except `lead_id` when the run has no lead.
 */
export function customUrlBody(workflowId: number, lead: StoredLead | null, blockFields: Record<string, string>): CustomUrlWorkflowPayload {
  const envelope: CustomUrlEnvelope = { event: 'workflow', ...(lead ? { lead_id: lead.id } : {}), workflow_id: workflowId, sent_at: sentAtNow() };
  const kept = Object.fromEntries(Object.entries(blockFields).filter(([key]) => !(CUSTOM_URL_ENVELOPE_KEYS.has(key) && Object.hasOwn(envelope, key))));
  return layer(newFields(kept), envelope);
}

/** An erased lead's notice: webhook `leadErased`, ids only. */
export const leadErasedBody = (leadId: number, crmRecordId: string | null): LeadErasedPayload => ({
  event: 'lead_erased',
  lead_id: leadId,
  crm_record_id: crmRecordId,
  sent_at: sentAtNow(),
});

// ---- merge tags ({{lead.name}} ...) in Custom URL blocks -------------------------------

export interface MergeContext {
  lead: Lead | null;
}

/** Merge tag -> the lead value it names. */
const MERGE_TAGS = new Map<string, (lead: Lead) => string | number | null>([
  ['lead.id', LEAD_VALUES.id],
  ['lead.name', LEAD_VALUES.name],
  ['lead.email', LEAD_VALUES.email],
  ['lead.phone', LEAD_VALUES.phone],
  ['lead.job_title', LEAD_VALUES.job_title],
  ['company.name', LEAD_VALUES.company],
  ['company.website', LEAD_VALUES.company_website],
]);

/** Replaces known merge tags; unknown ones are left as typed, missing values become empty. */
export function renderMergeTags(template: string, context: MergeContext, encode: (value: string) => string = (value) => value): string {
  return template.replace(/\{\{\s*([a-z_]+\.[a-z_]+)\s*\}\}/g, (whole, tag: string) => {
    const resolve = MERGE_TAGS.get(tag);
    if (!resolve) return whole;
    const value = context.lead ? resolve(context.lead) : null;
    return encode(value === null || value === undefined ? '' : String(value));
  });
}

export const renderUrl = (template: string, context: MergeContext) => renderMergeTags(template, context, encodeURIComponent);

// ---- encodings -------------------------------------------------------------------------

/** Form and query-string encoding: lists comma-joined, null empty, objects as JSON. */
export function formEncode(body: Readonly<Fields>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) params.append(key, '');
    else if (Array.isArray(value)) params.append(key, value.join(','));
    else if (typeof value === 'object') params.append(key, JSON.stringify(value));
    else params.append(key, String(value));
  }
  return params.toString();
}

export function encodeBody(body: WebhookBody, format: 'json' | 'form'): string {
  return format === 'json' ? JSON.stringify(body) : formEncode(body);
}

export const methodCarriesBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';
