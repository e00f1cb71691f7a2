import type { components } from '../../generated/api.js';
import type { FieldMapping, KeyValue } from '../db/schema.js';

type Lead = components['schemas']['Lead'];

export type PayloadValue = string | number | boolean | null | readonly string[] | Record<string, string>;
export type Payload = Record<string, PayloadValue>;

export const MAX_MAPPED_FIELDS = 50;
export const MAX_CONSTANT_FIELDS = 50;
export const MAX_HEADERS = 20;

const firstLink = (lead: Lead, type: string) => lead.links.find((link) => link.type === type)?.url ?? null;

// Lead attributes a connector mapping can name (`--map attribute=receiver_key`), plus
// `custom_fields.<key>` for one custom field.
const ATTRIBUTES: Record<string, (lead: Lead) => PayloadValue> = {
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
  linkedin_url: (lead) => firstLink(lead, 'linkedin'),
  website: (lead) => firstLink(lead, 'website'),
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
};

export const MAPPABLE_ATTRIBUTES = [...Object.keys(ATTRIBUTES), 'custom_fields.<key>'];

/** The fields sent when a connector has no mapping: documented in docs/outbound.md. */
export const DEFAULT_FIELD_SET: readonly FieldMapping[] = ['id', 'name', 'email', 'phone', 'job_title', 'company', 'stage', 'tags']
  .map((attribute) => ({ attribute, key: attribute }));

export function isMappableAttribute(attribute: string): boolean {
  return attribute in ATTRIBUTES || /^custom_fields\.[^.\s]+$/.test(attribute);
}

function attributeValue(lead: Lead, attribute: string): PayloadValue {
  if (attribute.startsWith('custom_fields.')) return lead.custom_fields[attribute.slice('custom_fields.'.length)] ?? null;
  return ATTRIBUTES[attribute]?.(lead) ?? null;
}

export function mappedFields(lead: Lead, mapping: readonly FieldMapping[]): Payload {
  const rows = mapping.length === 0 ? DEFAULT_FIELD_SET : mapping.slice(0, MAX_MAPPED_FIELDS);
  return Object.fromEntries(rows.map(({ attribute, key }) => [key, attributeValue(lead, attribute)]));
}

export const constantFields = (fields: readonly KeyValue[]): Payload =>
  Object.fromEntries(fields.slice(0, MAX_CONSTANT_FIELDS).map(({ key, value }) => [key, value]));

// ---- merge tags ({{lead.name}} ...) in Custom URL blocks -------------------------------

export interface MergeContext { lead: Lead | null }

const MERGE_TAGS: Record<string, (lead: Lead) => string | number | null> = {
  'lead.id': (lead) => lead.id,
  'lead.name': (lead) => lead.name,
  'lead.email': (lead) => lead.emails[0] ?? null,
  'lead.phone': (lead) => lead.phones[0] ?? null,
  'lead.job_title': (lead) => lead.job_title,
  'company.name': (lead) => lead.company?.name ?? null,
  'company.website': (lead) => lead.company?.website ?? null,
};

/** Replaces known merge tags; unknown ones are left as typed, missing values become empty. */
export function renderMergeTags(template: string, context: MergeContext, encode: (value: string) => string = (value) => value): string {
  return template.replace(/\{\{\s*([a-z_]+\.[a-z_]+)\s*\}\}/g, (whole, tag: string) => {
    const resolve = MERGE_TAGS[tag];
    if (!resolve) return whole;
    const value = context.lead ? resolve(context.lead) : null;
    return encode(value === null || value === undefined ? '' : String(value));
  });
}

export const renderUrl = (template: string, context: MergeContext) => renderMergeTags(template, context, encodeURIComponent);

// ---- encodings -------------------------------------------------------------------------

/** Form and query-string encoding: lists comma-joined, null empty, objects as JSON. */
export function formEncode(payload: Payload): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(payload)) {
    if (value === null || value === undefined) params.append(key, '');
    else if (Array.isArray(value)) params.append(key, value.join(','));
    else if (typeof value === 'object') params.append(key, JSON.stringify(value));
    else params.append(key, String(value));
  }
  return params.toString();
}

export function encodePayload(payload: Payload, format: 'json' | 'form'): string {
  return format === 'json' ? JSON.stringify(payload) : formEncode(payload);
}

export const methodCarriesBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';
