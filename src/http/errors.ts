import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { ParamsDictionary } from 'express-serve-static-core';
import type { Logger } from 'pino';
import type {
  DuplicateLeadError,
  IdempotencyConflictError,
  InsufficientScopeError,
  InternalError,
  InvalidApiKeyError,
  InvalidIdempotencyKeyError,
  NotFoundError,
  RateLimitError,
  RequestError,
  RoutingError,
  ServiceUnavailableError,
  ValidationError,
} from '../../generated/api.js';
import { isUnavailable } from '../db/availability.js';
import { IdempotencyConflict } from '../idempotency/claims.js';
import { DuplicateRejected, RowRejected } from '../leads/intake/rejections.js';
import { WriteQueueFull } from '../leads/intake/write-groups.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH, REQUEST_BODY_MAX_BYTES } from '../limits.js';
import { ClientGone, isBodyAborted } from './middleware/client-gone.js';
import { validationErrorsFromValidator } from './validation-errors.js';

/** Every error body the OpenAPI document gives. */
export type ErrorBody =
  | InvalidApiKeyError
  | InsufficientScopeError
  | NotFoundError
  | RoutingError
  | DuplicateLeadError
  | IdempotencyConflictError
  | InvalidIdempotencyKeyError
  | ValidationError
  | RateLimitError
  | InternalError
  | RequestError
  | ServiceUnavailableError;

// An error whose status and JSON body are part of the API contract.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super('message' in body ? body.message : `HTTP ${status}`);
  }
}

// The 422 shape: `{ errors: { <field>: [message, ...] } }`.
export class ValidationFailed extends ApiError {
  constructor(readonly errors: Record<string, string[]>) {
    super(422, { errors });
  }

  static single(field: string, message: string): ValidationFailed {
    return new ValidationFailed({ [field]: [message] });
  }
}

// Identical for a missing lead and another workspace's lead, so foreign ids cannot be probed.
export const NOT_FOUND_BODY: NotFoundError = { error: 'not_found', message: 'No lead with this id exists in this workspace.' };

const ROUTE_NOT_FOUND_BODY: RoutingError = { message: 'The requested route does not exist.' };

/** 400 for an empty or over-long key, reported only once the body validated (spec check order). */
function invalidIdempotencyKey(): ApiError {
  return new ApiError(400, {
    error: 'invalid_idempotency_key',
    message: `The Idempotency-Key header must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters long.`,
  });
}

const inMebibytes = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/** Seconds a client is asked to wait after a 503: about as long as a database restart or failover takes. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export const SERVICE_UNAVAILABLE_BODY: ServiceUnavailableError = {
  error: 'service_unavailable',
  message:
    'The service cannot reach its database right now; nothing was saved. Retry after the number of seconds in the Retry-After header (with the same Idempotency-Key, if you sent one).',
};

/** Seconds a client is asked to wait when this process has too much work queued: a group or two runs meanwhile. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

const WRITE_QUEUE_FULL_BODY: ServiceUnavailableError = {
  error: 'service_unavailable',
  message:
    'Too many writes are waiting on this server; nothing was saved. Retry after the number of seconds in the Retry-After header (with the same Idempotency-Key, if you sent one).',
};

export const routeNotFound: RequestHandler<ParamsDictionary, RoutingError> = (_req, res) => {
  res.status(404).json(ROUTE_NOT_FOUND_BODY);
};

/** A refusal of the domain (thrown by a service) as the contract answers it, or null. */
function fromDomain(error: unknown): ApiError | null {
  if (error instanceof RowRejected) return ValidationFailed.single(error.field, error.message);
  if (error instanceof DuplicateRejected) {
    return new ApiError(409, { error: 'duplicate_lead', message: error.message, ...error.match });
  }
  if (error instanceof IdempotencyConflict) return new ApiError(409, { error: error.code, message: error.message });
  if (error instanceof WriteQueueFull) return new ApiError(503, WRITE_QUEUE_FULL_BODY, { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) });
  return null;
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: unknown;
  expose?: boolean;
}

// The single place where anything thrown becomes an HTTP answer: contract errors keep
// their shape, body-parser and validator errors are mapped onto the spec's shapes, the
// database being unreachable is a 503 (reported through `onUnavailable`, which logs it once
// per outage), a client that went away gets nothing (there is no one to answer; logged at
// info, as clients do that), and anything else is a logged 500 that reveals nothing.
export function errorHandler(logger: Logger, onUnavailable: (error: unknown) => void = () => {}): ErrorRequestHandler<ParamsDictionary, ErrorBody> {
  return (error: unknown, req, res, next) => {
    if (error instanceof ClientGone || isBodyAborted(error)) {
      (req.log ?? logger).info('client went away before its answer');
      return;
    }
    if (res.headersSent) return next(error);
    const answer = error instanceof ApiError ? error : fromDomain(error);
    if (answer) {
      res.set(answer.headers).status(answer.status).json(answer.body);
      return;
    }
    if (isUnavailable(error)) {
      onUnavailable(error);
      res.set('Retry-After', String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS)).status(503).json(SERVICE_UNAVAILABLE_BODY);
      return;
    }
    const httpError = (typeof error === 'object' && error !== null ? error : {}) as HttpLikeError;
    const status = httpError.status ?? httpError.statusCode;

    switch (httpError.type) {
      case 'entity.parse.failed':
        res.status(400).json({ error: 'malformed_json', message: 'The request body is not valid JSON.' });
        return;
      case 'entity.too.large':
        res.status(413).json({ error: 'payload_too_large', message: `The request body exceeds the ${inMebibytes(REQUEST_BODY_MAX_BYTES)} limit.` });
        return;
      case 'charset.unsupported':
      case 'encoding.unsupported':
        res.status(415).json({ error: 'unsupported_media_type', message: 'The request body encoding is not supported; send UTF-8 JSON.' });
        return;
    }

    if (status === 415) {
      res.status(415).json({ error: 'unsupported_media_type', message: 'Send the request body as application/json.' });
      return;
    }
    if (status !== undefined && status >= 400 && status < 500 && Array.isArray(httpError.errors)) {
      const mapped = validationErrorsFromValidator(httpError.errors, req.body);
      if (mapped.kind === 'path') {
        // Only GET /leads/{id} has a path parameter, and only digits reach the validator:
        // an id the schema rejects (0) names no lead.
        res.status(404).json(NOT_FOUND_BODY);
        return;
      }
      if (mapped.kind === 'idempotencyKey') {
        const invalid = invalidIdempotencyKey();
        res.status(invalid.status).json(invalid.body);
        return;
      }
      res.status(422).json({ errors: mapped.errors });
      return;
    }
    // A path the router could not decode (`/api/v1/leads/%E0%A4%A`) names no route.
    if (status === 400 || status === 404) {
      res.status(404).json(ROUTE_NOT_FOUND_BODY);
      return;
    }

    (req.log ?? logger).error({ err: error }, 'unhandled error');
    res.status(500).json({ error: 'internal_error', message: 'Something went wrong on our side. Retry the request, and contact support if it keeps failing.' });
  };
}
