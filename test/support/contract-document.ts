import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { PUBLISHED_OPENAPI_PATH } from '../../src/paths.js';

// The published OpenAPI document (what integrators get) as data for tests: its examples, and a validator for any schema in it
// (the response schema of a documented (path, method, status), a webhook's body or header).

interface Example {
  value?: unknown;
  $ref?: string;
}
interface Media {
  schema?: unknown;
  examples?: Record<string, Example>;
}
interface Response {
  $ref?: string;
  content?: Record<string, Media>;
}
interface Operation {
  operationId: string;
  responses: Record<string, Response>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
}

export const contractDocument = parse(readFileSync(PUBLISHED_OPENAPI_PATH, 'utf8')) as OpenApiDocument;

/** A JSON pointer (with `#`) into the document. */
export const pointer = (...parts: string[]) => `#/${parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/** The object a local `$ref` names (followed until it is not a `$ref`), or `value` itself. */
export function follow<T extends { $ref?: string }>(value: T): T {
  if (!value.$ref) return value;
  const target = value.$ref
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], contractDocument);
  return follow(target as T);
}

/** The JSON response of a documented status, as [pointer to its schema, its examples by name]. */
export function documentedResponse(path: string, method: string, status: number): { schemaPointer: string; examples: Record<string, unknown> } {
  const operation = contractDocument.paths[path]?.[method];
  const ref = operation?.responses[String(status)];
  if (!ref) throw new Error(`${method.toUpperCase()} ${path} documents no ${status}`);
  const response = follow(ref);
  const where = ref.$ref ? ref.$ref.slice(2).split('/') : ['paths', path, method, 'responses', String(status)];
  const media = response.content?.['application/json'];
  if (!media?.schema) throw new Error(`${method.toUpperCase()} ${path} ${status} has no JSON schema`);
  const examples = Object.fromEntries(Object.entries(media.examples ?? {}).map(([name, example]) => [name, follow(example).value]));
  return { schemaPointer: pointer(...where, 'content', 'application/json', 'schema'), examples };
}

const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateSchema: false });
addFormats.default(ajv);
ajv.addSchema({ ...contractDocument, $id: 'openapi' });

/** Problems of `body` against the schema at `schemaPointer` of the document (empty when it conforms). */
export function schemaProblems(schemaPointer: string, body: unknown): string[] {
  const validate = ajv.getSchema(`openapi${schemaPointer}`);
  if (!validate) throw new Error(`no schema at ${schemaPointer}`);
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}

export const ROUTING_ERROR_SCHEMA = pointer('components', 'schemas', 'RoutingError');
