import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { validationErrorsFromValidator } from './validation-errors.js';

// An error whose status and JSON body are part of the API contract.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.message === 'string' ? body.message : `HTTP ${status}`);
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
export const NOT_FOUND_BODY = { error: 'not_found', message: 'No lead with this id exists in this workspace.' } as const;

export const ROUTE_NOT_FOUND_BODY = { message: 'The requested route does not exist.' };

export const routeNotFound: RequestHandler = (_req, res) => {
  res.status(404).json(ROUTE_NOT_FOUND_BODY);
};

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: unknown;
  expose?: boolean;
}

// The single place where anything thrown becomes an HTTP answer: contract errors keep
// their shape, body-parser and validator errors are mapped onto the spec's shapes, and
// anything else is a logged 500 that reveals nothing.
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof ApiError) {
      res.set(error.headers).status(error.status).json(error.body);
      return;
    }
    const httpError = (typeof error === 'object' && error !== null ? error : {}) as HttpLikeError;
    const status = httpError.status ?? httpError.statusCode;

    switch (httpError.type) {
      case 'entity.parse.failed':
        res.status(400).json({ error: 'malformed_json', message: 'The request body is not valid JSON.' });
        return;
      case 'entity.too.large':
        res.status(413).json({ error: 'payload_too_large', message: 'The request body exceeds the 1 MiB limit.' });
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
      const mapped = validationErrorsFromValidator(httpError.errors);
      if (mapped.kind === 'path') {
        // Only GET /leads/{id} has a path parameter, and only digits reach the validator:
        // an id the schema rejects (0) names no lead.
        res.status(404).json(NOT_FOUND_BODY);
        return;
      }
      res.status(422).json({ errors: mapped.errors });
      return;
    }
    if (status === 405 || status === 404) {
      res.status(404).json(ROUTE_NOT_FOUND_BODY);
      return;
    }

    (req.log ?? logger).error({ err: error }, 'unhandled error');
    res.status(500).json({ error: 'internal_error', message: 'Something went wrong on our side. Retry the request, and contact support if it keeps failing.' });
  };
}
