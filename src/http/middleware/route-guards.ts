import type { RequestHandler } from 'express';
import type { RoutingError } from '../../../generated/api.js';
import { storableText } from '../../storable-text.js';
import type { ContractOperation, ContractPath, IntegerPathParameter } from '../contract-routes.js';
import { ApiError, NOT_FOUND_BODY, ValidationFailed } from '../errors.js';
import { FieldErrors, readableKey } from '../validation-errors.js';

const DIGITS = /^\d+$/;

/**
 * The route matches only the document's own method and, for integer path parameters, only
 * digits: anything else falls through to the 405 or 404 below. (Express would also run a
 * GET route for HEAD, a method the document does not give.)
 */
export function matchesContract(method: string, integerPathParameters: string[]): RequestHandler {
  const upper = method.toUpperCase();
  return (req, _res, next) => {
    if (req.method !== upper || integerPathParameters.some((name) => !DIGITS.test(String(req.params[name])))) {
      next('route');
      return;
    }
    next();
  };
}

const METHOD_NOT_ALLOWED_MESSAGE = 'This route does not support this method; the Allow header lists the methods it does support.';

/** A known path called with a method the document does not give it: 405 with `Allow`. */
export function methodNotAllowed(path: ContractPath): RequestHandler {
  const allow = path.methods.map((method) => method.toUpperCase()).join(', ');
  return (req, res, next) => {
    if (path.integerPathParameters.some((name) => !DIGITS.test(String(req.params[name])))) {
      next();
      return;
    }
    res
      .set('Allow', allow)
      .status(405)
      .json({ message: METHOD_NOT_ALLOWED_MESSAGE } satisfies RoutingError);
  };
}

/**
 * Unknown query parameters are rejected like unknown body fields: 422 naming each of them.
 * It runs on every route (also where the request validator is skipped for speed), and costs
 * one string search when there is no query string.
 */
export function rejectUnknownQueryParameters(operation: ContractOperation): RequestHandler {
  return (req, _res, next) => {
    if (!req.url.includes('?')) {
      next();
      return;
    }
    const errors = new FieldErrors();
    for (const sent of Object.keys(req.query as object)) {
      if (operation.queryParameters.has(sent)) continue;
      // A name is percent-decoded text of the client's: the text rule applies to the answer naming it.
      const name = storableText(sent);
      errors.add(readableKey(name), name === '' ? 'A query parameter with an empty name is not allowed.' : `The ${name} query parameter is not allowed.`);
    }
    next(errors.isEmpty() ? undefined : new ValidationFailed(errors.toObject()));
  };
}

/**
 * For an operation whose only input is integer path parameters (GET /leads/{id}), what the
 * request validator does there, without its cost (a visible share of the route's CPU, as
 * bench/README.md shows): the digits (matchesContract saw to that) become a number, and a value
 * outside the schema's bounds (0, beyond 2^53 - 1) names no row: 404 not_found, as the
 * validator's path error is answered (errors.ts).
 */
export function integerPathParameters(parameters: IntegerPathParameter[]): RequestHandler {
  return (req, _res, next) => {
    for (const { name, minimum, maximum } of parameters) {
      const value = Number(req.params[name]);
      if (!(value >= minimum && value <= maximum)) throw new ApiError(404, NOT_FOUND_BODY);
      (req.params as Record<string, unknown>)[name] = value;
    }
    next();
  };
}
