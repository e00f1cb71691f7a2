import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { isUnavailable } from '../db/availability.js';
import { Refused } from '../refused.js';
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
  if (error.code === 'invalid_argument' || error.code === 'user_not_in_workspace') return 400;
  return 409;
}

/** The console's one error handler: every failure is an HTML page, never the API's JSON. */
export function consoleErrors(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    let status = 500;
    let message = 'Something went wrong on our side; nothing was changed.';
    if (error instanceof ConsoleError) ({ status, message } = error);
    else if (error instanceof Refused) ({ status, message } = { status: statusOf(error), message: error.message });
    else if (isUnavailable(error)) ({ status, message } = { status: 503, message: 'The database cannot be reached right now. Try again in a few seconds.' });
    else if ((error as { type?: string }).type === 'entity.too.large') ({ status, message } = { status: 413, message: 'That form was too large.' });
    else logger.error({ err: error }, 'console page failed');
    render(res, 'error', { title: status === 404 ? 'Not found' : 'Not done', message, status }, status);
  };
}
