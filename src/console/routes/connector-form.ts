import { parseFormat, parseMaxPerSecond, parseMethod, parsePairs, parseWebhookUrl } from '../../connectors/input.js';
import type { ConnectorAuth, FieldMapping } from '../../db/schema.js';
import { droppedHeaderReason } from '../../deliveries/headers.js';
import { isMappableAttribute, MAPPABLE_ATTRIBUTES, MAX_CONSTANT_FIELDS, MAX_HEADERS, MAX_MAPPED_FIELDS } from '../../deliveries/payload.js';
import type { NewConnector } from '../../connectors/repository.js';
import { Refused } from '../../refused.js';
import { checked, pairLines, text } from './form.js';

// The connect form, read with the connectors' input rules (src/connectors/input.ts), the CLI's too, under the
// form's field names, so both edges accept and refuse the same settings.

const invalid = (message: string) => new Refused('invalid_argument', message);

function mapping(lines: string[]): FieldMapping[] {
  return parsePairs(lines, 'Mapped fields', MAX_MAPPED_FIELDS).map(({ key: attribute, value: key }) => {
    if (!isMappableAttribute(attribute)) throw invalid(`Mapped fields: unknown lead attribute "${attribute}". Known: ${MAPPABLE_ATTRIBUTES.join(', ')}.`);
    if (key.trim() === '') throw invalid(`Mapped fields: ${attribute}= needs a receiver key.`);
    return { attribute, key: key.trim() };
  });
}

function authentication(body: unknown): ConnectorAuth {
  const type = text(body, 'auth') || 'none';
  const required = (name: string, label: string) => {
    const value = text(body, name);
    if (value === '') throw invalid(`Authentication ${type} needs ${label}.`);
    return value;
  };
  switch (type) {
    case 'none':
      return { type: 'none' };
    case 'bearer':
      return { type: 'bearer', token: required('token', 'a Token') };
    case 'header': {
      const name = required('header_name', 'a Header name');
      const unsendable = droppedHeaderReason(name);
      if (unsendable) throw invalid(`Header name: ${unsendable}.`);
      return { type: 'header', name, value: required('header_value', 'a Header value') };
    }
    case 'basic':
      return { type: 'basic', username: required('username', 'a Username'), password: text(body, 'password') };
    default:
      throw invalid(`Authentication must be none, bearer, header or basic, got "${type}".`);
  }
}

/** A cap field: empty is no cap (or, when changing, `off` too). */
export function capField(body: unknown, allowOff: boolean): number | null {
  const value = text(body, 'max_per_second').trim();
  if (value === '') return null;
  return parseMaxPerSecond(value, 'Max per second', { allowOff });
}

export function connectorFromForm(body: unknown, workspaceId: number): { connector: Omit<NewConnector, 'signing_secret'>; maxPerSecond: number | null } {
  return {
    connector: {
      workspace_id: workspaceId,
      url: parseWebhookUrl(text(body, 'url'), 'URL'),
      method: parseMethod(text(body, 'method') || undefined),
      format: parseFormat(text(body, 'format') || undefined),
      auth: authentication(body),
      mapping: mapping(pairLines(text(body, 'mapping'))),
      fields: parsePairs(pairLines(text(body, 'fields')), 'Constant fields', MAX_CONSTANT_FIELDS),
      headers: parsePairs(pairLines(text(body, 'headers')), 'Headers', MAX_HEADERS),
      auto_push: checked(body, 'auto_push'),
    },
    maxPerSecond: capField(body, false),
  };
}
