import { readFileSync } from 'node:fs';
import type { RequestHandler, Response } from 'express';
import { parse } from 'yaml';
import { HTTP_METHODS, resolve, type HttpMethod } from './contract-routes.js';

// What the published document deprecates, read once at start, and how a request meets it:
// a deprecated operation answers with the Deprecation, Sunset and Link headers the document
// declares on its responses (their values are spelt once, by scripts/deprecation-headers.mjs,
// so the service and the Prism mock send the same); a request that sends a property marked
// `deprecated: true` gets a warning naming it (meta.warnings, or the batch row's warnings).

const HEADERS = ['Deprecation', 'Sunset', 'Link'] as const;

interface Schema {
  $ref?: string;
  deprecated?: boolean;
  'x-sunset'?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
}
interface Operation {
  operationId?: string;
  deprecated?: boolean;
  responses?: Record<string, { $ref?: string; headers?: Record<string, { example?: string }> }>;
  requestBody?: { $ref?: string; content?: Record<string, { schema?: Schema }> };
}
type Document = { paths?: Record<string, Partial<Record<HttpMethod, Operation>>> };

/** A deprecated input property: where it is (`company.industry`) and its sunset date. */
interface DeprecatedField {
  path: string[];
  sunset: string | undefined;
}

export interface Deprecations {
  /** The Deprecation, Sunset and Link headers of each deprecated operation, by operationId. */
  headers: Map<string, Record<string, string>>;
  /** The deprecated properties of each operation's JSON body (`leads[]` for a batch row), by operationId. */
  fields: Map<string, DeprecatedField[]>;
}

/** Every deprecated property under `schema` (arrays' items as `[]`), each once. */
function deprecatedFields(document: unknown, schema: Schema | undefined, at: string[] = [], enclosing = new Set<string>()): DeprecatedField[] {
  if (!schema || (schema.$ref && enclosing.has(schema.$ref))) return [];
  const inside = schema.$ref ? new Set([...enclosing, schema.$ref]) : enclosing;
  const resolved = resolve(document, schema);
  const found: DeprecatedField[] = [];
  for (const [name, property] of Object.entries(resolved.properties ?? {})) {
    const path = [...at, name];
    const target = resolve(document, property);
    if (property.deprecated || target.deprecated) found.push({ path, sunset: property['x-sunset'] ?? target['x-sunset'] });
    found.push(...deprecatedFields(document, property, path, inside));
  }
  if (resolved.items) found.push(...deprecatedFields(document, resolved.items, [...at, '[]'], inside));
  for (const branch of [...(resolved.allOf ?? []), ...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])]) found.push(...deprecatedFields(document, branch, at, inside));
  const seen = new Set<string>();
  return found.filter((field) => !seen.has(field.path.join('.')) && seen.add(field.path.join('.')));
}

export function readDeprecations(publishedPath: string): Deprecations {
  const document = parse(readFileSync(publishedPath, 'utf8')) as Document;
  const deprecations: Deprecations = { headers: new Map(), fields: new Map() };
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation?.operationId) continue;
      if (operation.deprecated) {
        const [first] = Object.values(operation.responses ?? {}).map((response) => resolve(document, response));
        const headers = Object.fromEntries(HEADERS.map((name) => [name, first?.headers?.[name]?.example]));
        const missing = HEADERS.filter((name) => typeof headers[name] !== 'string');
        if (missing.length > 0) throw new Error(`${method.toUpperCase()} ${path} is deprecated but its responses declare no ${missing.join(', ')} (run npm run generate)`);
        deprecations.headers.set(operation.operationId, headers as Record<string, string>);
      }
      const body = operation.requestBody && resolve(document, operation.requestBody);
      const fields = deprecatedFields(document, body?.content?.['application/json']?.schema);
      if (fields.length > 0) deprecations.fields.set(operation.operationId, fields);
    }
  }
  return deprecations;
}

/** Sends a deprecated operation's headers on whatever it answers (errors included). */
export function announceDeprecation(headers: Record<string, string>): RequestHandler {
  return (_req, res, next) => {
    res.set(headers);
    next();
  };
}

/** A warning for each deprecated property the body sends, by batch row (`null` outside a batch's `leads`). */
export interface FieldNotice {
  row: number | null;
  message: string;
}

function noticesIn(value: unknown, field: DeprecatedField, operationId: string, at = 0, row: number | null = null, prefix: string[] = []): FieldNotice[] {
  if (at === field.path.length) {
    const sunset = field.sunset ? ` and will be ignored or refused after ${field.sunset}` : '';
    return [{ row, message: `${prefix.join('.')}: deprecated${sunset}; see /docs#operation/${operationId}.` }];
  }
  const step = field.path[at]!;
  if (step === '[]') {
    if (!Array.isArray(value)) return [];
    // A batch's rows are answered one by one: a notice inside `leads` goes to its row.
    const byRow = prefix.length === 1 && prefix[0] === 'leads' && row === null;
    return value.flatMap((element, index) => noticesIn(element, field, operationId, at + 1, byRow ? index : row, byRow ? [] : prefix));
  }
  if (value === null || typeof value !== 'object' || !Object.hasOwn(value, step)) return [];
  return noticesIn((value as Record<string, unknown>)[step], field, operationId, at + 1, row, [...prefix, step]);
}

/** Notes each deprecated property the request body sends, for the handler to report (deprecatedFieldNotices). */
export function noticeDeprecatedFields(operationId: string, fields: DeprecatedField[]): RequestHandler {
  return (req, res, next) => {
    res.locals.deprecatedFieldNotices = fields.flatMap((field) => noticesIn(req.body, field, operationId));
    next();
  };
}

/** The notices noticeDeprecatedFields left on this response (none for an operation without deprecated properties). */
export function deprecatedFieldNotices(res: Response): FieldNotice[] {
  return (res.locals.deprecatedFieldNotices as FieldNotice[] | undefined) ?? [];
}
