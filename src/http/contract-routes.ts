import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { scopeValues, type Scope } from '../../generated/api.js';
import type { OperationId } from './operations.js';

// What the router needs of the OpenAPI document, read once at start: the paths, their
// methods and operationIds, the scope each operation requires, its declared query
// parameters and whether it takes a JSON body. Routes are bound from this, never re-typed.

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface ContractOperation {
  operationId: OperationId;
  method: HttpMethod;
  /** As written in the document: `/api/v1/leads/{id}`. */
  path: string;
  /** Express 5 syntax: `/api/v1/leads/:id`. */
  expressPath: string;
  /** Integer path parameters: a value that is not all digits does not match the route (404). */
  integerPathParameters: string[];
  queryParameters: ReadonlySet<string>;
  requiredScopes: Scope[];
  hasJsonBody: boolean;
  /** No parameters and no body: the request validator has nothing to check. */
  declaresNoInput: boolean;
  /**
   * When the only input is integer path parameters (GET /leads/{id}): their bounds, all the
   * request validator would check there (matchesContract already saw digits). Else null.
   */
  integerPathOnly: IntegerPathParameter[] | null;
}

export interface IntegerPathParameter {
  name: string;
  minimum: number;
  maximum: number;
}

export interface ContractPath {
  path: string;
  expressPath: string;
  integerPathParameters: string[];
  /** The methods the document gives this path, for the `Allow` header of a 405. */
  methods: HttpMethod[];
}

interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
  $ref?: string;
}
interface Schema {
  type?: string | string[];
  $ref?: string;
  minimum?: number;
  maximum?: number;
}
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, unknown> };
  security?: Array<Record<string, string[]>>;
}
interface Document {
  paths: Record<string, Partial<Record<HttpMethod, Operation>> & { parameters?: Parameter[] }>;
  security?: Array<Record<string, string[]>>;
}

/** The item a `$ref` names (followed until it is not one), or the value itself. */
export function resolve<T extends object>(document: unknown, value: T | { $ref: string }): T {
  if (!('$ref' in value) || typeof value.$ref !== 'string') return value as T;
  const pointer = value.$ref
    .replace(/^#\//, '')
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const target = pointer.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document);
  if (target === undefined) throw new Error(`OpenAPI document: unresolved $ref ${value.$ref}`);
  return resolve(document, target as T);
}

function scopesOf(security: Operation['security'] | undefined): Scope[] {
  const scopes = (security ?? []).flatMap((requirement) => Object.values(requirement).flat());
  for (const scope of scopes) {
    if (!(scopeValues as readonly string[]).includes(scope)) throw new Error(`OpenAPI document: unknown scope ${scope}`);
  }
  return scopes as Scope[];
}

export function readContract(documentPath: string): { operations: ContractOperation[]; paths: ContractPath[] } {
  const document = parse(readFileSync(documentPath, 'utf8')) as Document;
  const operations: ContractOperation[] = [];
  const paths: ContractPath[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
    const methods = HTTP_METHODS.filter((method) => item[method] !== undefined);
    const integerPathParameters = new Set<string>();
    for (const method of methods) {
      const operation = item[method]!;
      if (!operation.operationId) throw new Error(`OpenAPI document: ${method.toUpperCase()} ${path} has no operationId`);
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map((parameter) => resolve<Parameter>(document, parameter));
      const integerPath: IntegerPathParameter[] = [];
      for (const parameter of parameters) {
        const schema = parameter.schema ? resolve<Schema>(document, parameter.schema) : {};
        if (parameter.in === 'path' && schema.type === 'integer') {
          integerPathParameters.add(parameter.name);
          integerPath.push({ name: parameter.name, minimum: schema.minimum ?? 0, maximum: schema.maximum ?? Number.MAX_SAFE_INTEGER });
        }
      }
      const hasJsonBody = operation.requestBody !== undefined && 'application/json' in (resolve(document, operation.requestBody).content ?? {});
      operations.push({
        operationId: operation.operationId as OperationId,
        method,
        path,
        expressPath,
        integerPathParameters: [],
        queryParameters: new Set(parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name)),
        requiredScopes: scopesOf(operation.security ?? document.security),
        hasJsonBody,
        declaresNoInput: parameters.length === 0 && operation.requestBody === undefined,
        integerPathOnly: integerPath.length > 0 && integerPath.length === parameters.length && operation.requestBody === undefined ? integerPath : null,
      });
    }
    for (const operation of operations.filter((candidate) => candidate.path === path)) operation.integerPathParameters = [...integerPathParameters];
    paths.push({ path, expressPath, integerPathParameters: [...integerPathParameters], methods });
  }
  return { operations, paths };
}
