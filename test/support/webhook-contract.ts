import type { IncomingHttpHeaders } from 'node:http';
import type { DeliverySender } from '../../src/db/schema.js';
import { contractDocument, pointer, schemaProblems } from './contract-document.js';
import type { ReceivedRequest } from './receiver.js';

// Checks a request a test receiver got against the OpenAPI document's `webhooks` section: the
// webhook operation of its sender and method, its header parameters, and its body (by content
// type) or, for GET and DELETE, its query string. The document lets a Saved-connector block's
// fields replace the envelope, so `event` alone cannot tell every delivery's webhook apart (a
// Custom URL delivery that lost `workflow_id` would still be a valid Saved-connector body):
// the sender is therefore read from the delivery row the request's `webhook-id` names.

/** The webhook of the document that describes each sender's deliveries. */
export const WEBHOOK_OF_SENDER: Record<DeliverySender, string> = {
  connector_push: 'lead',
  test: 'test',
  custom_url: 'workflowCustomUrl',
  saved_connector: 'workflowSavedConnector',
  erasure_notice: 'leadErased',
};

interface Located<T> {
  at: string[];
  node: T;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  $ref?: string;
}
interface RequestBody {
  content?: Record<string, unknown>;
  $ref?: string;
}
interface WebhookOperation {
  parameters?: Parameter[];
  requestBody?: RequestBody;
}

/** `node` at `at`, following local `$ref`s, with the pointer parts of where it ends. */
function located<T extends { $ref?: string }>(node: T, at: string[]): Located<T> {
  if (!node.$ref) return { at, node };
  const target = node.$ref
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  const resolved = target.reduce<unknown>((parent, key) => (parent as Record<string, unknown>)[key], contractDocument) as T;
  return located(resolved, target);
}

/** Form and query strings as an object; a key sent twice is a problem (the document has none). */
function formFields(text: string, problems: string[]): Record<string, string> {
  const fields: Record<string, string> = Object.create(null);
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, key)) problems.push(`key ${JSON.stringify(key)} sent twice`);
    fields[key] = value;
  }
  return fields;
}

function headerProblems(parameters: Located<Parameter>[], headers: IncomingHttpHeaders): string[] {
  return parameters
    .filter(({ node }) => node.in === 'header')
    .flatMap(({ node, at }) => {
      const value = headers[node.name.toLowerCase()];
      if (value === undefined) return node.required ? [`header ${node.name} is missing`] : [];
      if (Array.isArray(value)) return [`header ${node.name} sent ${value.length} times`];
      return schemaProblems(pointer(...at, 'schema'), value).map((problem) => `header ${node.name}${problem}`);
    });
}

function bodyProblems(requestBody: Located<RequestBody>, request: ReceivedRequest): string[] {
  const contentType = request.headers['content-type']?.split(';')[0]!.trim().toLowerCase();
  const media = Object.keys(requestBody.node.content ?? {});
  if (!contentType || !media.includes(contentType)) return [`content type ${JSON.stringify(contentType ?? null)} is none of ${media.join(', ')}`];
  const problems: string[] = [];
  let body: unknown;
  if (contentType === 'application/json') {
    try {
      body = JSON.parse(request.body);
    } catch {
      return ['the body is not JSON'];
    }
  } else {
    body = formFields(request.body, problems);
  }
  const schema = pointer(...requestBody.at, 'content', contentType, 'schema');
  return [...problems, ...schemaProblems(schema, body).map((problem) => `body${problem}`)];
}

/**
 * Why `request` is not the delivery the document's webhook `name` describes for its method
 * (empty when it conforms).
 */
export function webhookProblems(name: string, request: ReceivedRequest): string[] {
  const method = request.method.toLowerCase();
  const pathItem = contractDocument.webhooks[name] as (Record<string, WebhookOperation> & { parameters?: Parameter[] }) | undefined;
  if (!pathItem) return [`the document has no webhook ${name}`];
  const operation = pathItem[method];
  if (!operation || method === 'parameters') return [`webhook ${name} documents no ${request.method}`];
  const at = ['webhooks', name, method];
  const parameters = [
    ...(pathItem.parameters ?? []).map((parameter, index) => located(parameter, ['webhooks', name, 'parameters', String(index)])),
    ...(operation.parameters ?? []).map((parameter, index) => located(parameter, [...at, 'parameters', String(index)])),
  ];
  const problems = headerProblems(parameters, request.headers);
  if (operation.requestBody) return [...problems, ...bodyProblems(located(operation.requestBody, [...at, 'requestBody']), request)];
  if (request.body !== '') problems.push(`a ${request.method} delivery carries a body`);
  // The query of a body-less delivery is one form-style object parameter: the fields.
  for (const { node, at: where } of parameters.filter(({ node }) => node.in === 'query')) {
    const fields = formFields(request.query, problems);
    problems.push(...schemaProblems(pointer(...where, 'schema'), fields).map((problem) => `query (${node.name})${problem}`));
  }
  return problems;
}
