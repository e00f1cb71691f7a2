import type { webhooks } from '../../generated/api.js';
import type { ConnectorAuth, HeaderRow, KeyValue } from '../db/schema.js';
import { MAX_HEADERS } from './payload.js';

/** The headers the OpenAPI document gives every webhook delivery (the same for each of them). */
export type WebhookHeaders = webhooks['lead']['parameters']['header'];
/** The Standard Webhooks signature headers, set per attempt. */
export type SignatureHeaders = Pick<WebhookHeaders, 'webhook-id' | 'webhook-timestamp' | 'webhook-signature'>;

// RFC 9110 field-name token.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const isValidHeaderName = (name: string) => HEADER_NAME.test(name);
// Framing headers are the HTTP client's business; the signature headers are ours.
const RESERVED = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
const MAX_VALUE_LENGTH = 8192;

const cleanValue = (value: string) => value.replace(/[\r\n\0]/g, '').slice(0, MAX_VALUE_LENGTH);

/** Why a configured header of this name is never sent, or null when it is. */
export function droppedHeaderReason(name: string): string | null {
  const trimmed = name.trim();
  if (!isValidHeaderName(trimmed)) return `"${trimmed}" is not a valid HTTP header name`;
  if (RESERVED.has(trimmed.toLowerCase())) return `${trimmed} is set by the sender itself`;
  // The HTTP client keeps headers in a plain object, where this name would be the prototype.
  if (trimmed === '__proto__') return '__proto__ cannot be sent as a header name';
  return null;
}

/** Drops reserved and unsendable names, removes line breaks from values; extra rows past the cap are dropped. */
export function sanitizeHeaders(rows: readonly KeyValue[]): HeaderRow[] {
  return rows
    .slice(0, MAX_HEADERS)
    .filter(({ key }) => droppedHeaderReason(key) === null)
    .map(({ key, value }) => ({ name: key.trim(), value: cleanValue(String(value)) }));
}

export function authHeaders(auth: ConnectorAuth): HeaderRow[] {
  switch (auth.type) {
    case 'bearer':
      return [{ name: 'Authorization', value: cleanValue(`Bearer ${auth.token}`) }];
    case 'basic':
      return [{ name: 'Authorization', value: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` }];
    case 'header':
      return sanitizeHeaders([{ key: auth.name, value: auth.value }]);
    default:
      return [];
  }
}

/** Later rows replace earlier ones of the same name (case-insensitive). */
export function mergeHeaders(...groups: HeaderRow[][]): Record<string, string> {
  const merged = new Map<string, HeaderRow>();
  for (const row of groups.flat()) merged.set(row.name.toLowerCase(), row);
  return Object.fromEntries([...merged.values()].map(({ name, value }) => [name, value]));
}
