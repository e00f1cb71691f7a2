import { contractDocument, follow, pointer, ROUTING_ERROR_SCHEMA, schemaProblems } from './contract-document.js';

// Every answer a test receives is checked against the OpenAPI document, whatever the test
// itself asserts: the status must be one the operation documents, the content type the
// documented one, and the body must conform to the documented schema. This covers the
// answers sent before the response validator runs (401, 403, 429, the body parser's
// 400/413/415), which the service's own validation never sees.

const API_PREFIX = '/api/v1/';

const templates = Object.keys(contractDocument.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

export interface ReceivedResponse {
  status: number;
  contentType: string | undefined;
  text: string;
}

/** Where `path` with `method` leads in the document: the pointer to its responses, or a routing answer. */
function documentedResponses(
  method: string,
  path: string,
): { responsesPointer: string; responses: Record<string, { $ref?: string; content?: Record<string, { schema?: unknown }> }> } | 'unknown-route' | 'undocumented' {
  const template = templates.find(({ pattern }) => pattern.test(path))?.template;
  if (!template) return path.startsWith(API_PREFIX) || path === '/api/v1' ? 'unknown-route' : 'undocumented';
  const operations = contractDocument.paths[template]!;
  const operation = operations[method] ?? Object.values(operations).find((candidate) => candidate?.responses);
  if (!operation) return 'undocumented';
  const actualMethod = operations[method] ? method : Object.keys(operations).find((key) => operations[key] === operation)!;
  return { responsesPointer: pointer('paths', template, actualMethod, 'responses'), responses: operation.responses };
}

function parsedBody(response: ReceivedResponse): { body?: unknown; problem?: string } {
  try {
    return { body: JSON.parse(response.text) };
  } catch {
    return { problem: `the body is not JSON: ${response.text.slice(0, 200)}` };
  }
}

/** What is wrong with `response` to `method path` by the document (empty when it conforms or the path is not the document's). */
export function documentProblems(method: string, url: string, response: ReceivedResponse): string[] {
  const path = new URL(url, 'http://test.invalid').pathname;
  const verb = method.toLowerCase();
  const where = documentedResponses(verb, path);
  if (where === 'undocumented') return [];
  const isJson = (response.contentType ?? '').startsWith('application/json');
  if (where === 'unknown-route') {
    if (response.status !== 404) return [`an unknown route answered ${response.status}, not 404`];
    if (!isJson) return [`an unknown route answered with content type ${response.contentType}`];
    const { body, problem } = parsedBody(response);
    return problem ? [problem] : schemaProblems(ROUTING_ERROR_SCHEMA, body);
  }
  const status = String(response.status);
  const documented = where.responses[status];
  if (!documented) return [`${response.status} is not a documented answer of ${verb.toUpperCase()} ${path}`];
  const schemaBase = documented.$ref ? documented.$ref : `${where.responsesPointer}/${status.replaceAll('~', '~0')}`;
  const media = follow(documented).content?.['application/json'];
  // A HEAD answer has the headers of its GET and never a body.
  if (verb === 'head') return [];
  if (!media) return response.text.length === 0 ? [] : [`${response.status} documents no body, got: ${response.text.slice(0, 200)}`];
  if (!isJson) return [`${response.status} answered with content type ${response.contentType}, not application/json`];
  const { body, problem } = parsedBody(response);
  if (problem) return [problem];
  return schemaProblems(`${schemaBase}/content/application~1json/schema`, body).map((line) => `${response.status} body breaks the document: ${line}`);
}

/** Throws when `response` breaks the document (used on every answer of the test clients). */
export function expectMatchesDocument(method: string, url: string, response: ReceivedResponse): void {
  const problems = documentProblems(method, url, response);
  if (problems.length > 0) {
    throw new Error(`${method.toUpperCase()} ${url} -> ${response.status} does not match the OpenAPI document:\n${problems.join('\n')}\nbody: ${response.text.slice(0, 500)}`);
  }
}

/** The global fetch, with the answer checked against the document like supertest's (for tests on a real socket). */
export async function fetchCheckedAgainstDocument(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  const response = await fetch(request);
  expectMatchesDocument(request.method, request.url, {
    status: response.status,
    contentType: response.headers.get('content-type') ?? undefined,
    text: await response.clone().text(),
  });
  return response;
}
