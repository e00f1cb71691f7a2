import type { ApiResult, NetworkError, ResponseInfo, UnexpectedResponseError } from './types.js';
import { NetworkFailure } from './transport.js';

// Turns what openapi-fetch returns (or throws) into the client's result union. The type
// side lives in types.ts; this is its runtime twin, so both rules are stated here:
// - 2xx: `{ ok: true, status, data }`;
// - 4xx with a JSON object body: the documented error body, given `error` when it has none
//   (`validation_failed` for 422, `route_not_found` for 404, else `http_<status>`) and a
//   `message` when it has none (422: the field messages in one line);
// - 5xx, or a body that is not a JSON object: `unexpected_response` (the document
//   describes no 5xx body);
// - no answer at all: `network_error`.

interface FetchOutcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

const isJsonObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function missingErrorCode(status: number): string {
  if (status === 422) return 'validation_failed';
  if (status === 404) return 'route_not_found';
  return `http_${status}`;
}

function summary(body: Record<string, unknown>, status: number): string {
  if (typeof body.message === 'string') return body.message;
  if (isJsonObject(body.errors)) {
    const parts = Object.entries(body.errors).map(([field, messages]) => `${field}: ${Array.isArray(messages) ? messages.join(' ') : String(messages)}`);
    if (parts.length > 0) return `The request failed validation. ${parts.join('; ')}`;
  }
  return `HTTP ${status}`;
}

function info(response: Response, attempts: number): ResponseInfo {
  return { requestId: response.headers.get('x-request-id'), attempts, headers: response.headers };
}

export function resultFromOutcome<Op>(outcome: FetchOutcome, attempts: number): ApiResult<Op> {
  const { response } = outcome;
  const base = info(response, attempts);
  if (response.ok) {
    return { ok: true, status: response.status, data: outcome.data, replayed: response.headers.get('idempotency-replayed') === 'true', ...base } as ApiResult<Op>;
  }
  const body = outcome.error;
  if (response.status < 500 && isJsonObject(body)) {
    const error = typeof body.error === 'string' ? body : { ...body, error: missingErrorCode(response.status), message: summary(body, response.status) };
    return { ok: false, status: response.status, error, ...base } as ApiResult<Op>;
  }
  const message = isJsonObject(body) && typeof body.message === 'string' ? body.message : `HTTP ${response.status} ${response.statusText}`.trim();
  const unexpected: UnexpectedResponseError = { error: 'unexpected_response', message, body };
  return { ok: false, status: response.status, error: unexpected, ...base } as ApiResult<Op>;
}

/** A call that threw: the transport gave up (network_error), or a 2xx body was not JSON. */
export function resultFromThrown<Op>(thrown: unknown): ApiResult<Op> {
  if (thrown instanceof NetworkFailure) {
    const error: NetworkError = { error: 'network_error', message: thrown.message, cause: thrown.cause };
    return { ok: false, status: null, error, requestId: null, attempts: thrown.attempts, headers: null } as ApiResult<Op>;
  }
  if (thrown instanceof SyntaxError) {
    const error: UnexpectedResponseError = { error: 'unexpected_response', message: `the answer is not JSON: ${thrown.message}`, body: null };
    return { ok: false, status: null, error, requestId: null, attempts: 1, headers: null } as ApiResult<Op>;
  }
  throw thrown;
}
