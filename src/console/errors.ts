import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { isUnavailable } from '../db/availability.js';
import { Refused } from '../refused.js';
import { SecretKeyError } from '../secrets/keyring.js';
import { render } from './views.js';

/** A page the console answers instead of the one asked for: status and what to tell the person. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

// The same words for a missing page and for another workspace's: ids cannot be probed.
export const NOT_FOUND = 'There is no such page in this workspace.';

export const consoleNotFound: RequestHandler = (_req, _res, next) => next(new ConsoleError(404, NOT_FOUND));

/** A service's refusal keeps the CLI's words; its code picks the status. */
function statusOf(error: Refused): number {
  if (error.code === 'not_found') return 404;
  if (error.code === 'permission_denied') return 403;
  if (error.code === 'throttled') return 429;
  if (error.code === 'busy') return 503;
  if (error.code === 'invalid_argument' || error.code === 'user_not_in_workspace') return 400;
  return 409;
}

/**
 * What the form parser refuses (body-parser's http-errors, exposed 4xx, most with a `type`): a
 * body too large or with too many fields 413, an encoding or charset it cannot read 415, any
 * other (a body that does not decompress) 400.
 */
function parserRefusal(error: unknown): ConsoleError | null {
  const { type, status, expose } = (error ?? {}) as { type?: unknown; status?: unknown; expose?: unknown };
  if (type === 'entity.too.large' || type === 'parameters.too.many') return new ConsoleError(413, 'That form was too large.');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new ConsoleError(415, 'That form was sent in an encoding this console cannot read.');
  if (expose === true && typeof status === 'number' && status >= 400 && status < 500) return new ConsoleError(400, 'That form could not be read.');
  return null;
}

/** The console's one error handler: every failure is an HTML page, never the API's JSON. */
export function consoleErrors(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    let status = 500;
    let message = 'Something went wrong on our side; nothing was changed.';
    const known = error instanceof ConsoleError ? error : parserRefusal(error);
    if (known) ({ status, message } = known);
    else if (error instanceof Refused) ({ status, message } = { status: statusOf(error), message: error.message });
    // A stored secret that does not open (moved from another row, altered, or sealed with a key this
    // server lacks) is the stored data's state, not a fault of this request: said plainly, not a 500.
    else if (error instanceof SecretKeyError) ({ status, message } = { status: 409, message: `A stored secret cannot be used: ${error.message}. Nothing was changed.` });
    else if (isUnavailable(error)) ({ status, message } = { status: 503, message: 'The database cannot be reached right now. Try again in a few seconds.' });
    else logger.error({ err: error }, 'console page failed');
    render(res, 'error', { title: status === 404 ? 'Not found' : 'Not done', message, status }, status);
  };
}
